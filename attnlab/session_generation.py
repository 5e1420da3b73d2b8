"""What a Session (attnlab/session.py) does with what comes back: one Generate press (the model's next token
appended to the decoder input, or the prompt of a decoder-only model, greedy or drawn from the run's seeded
stream, present/texts.py), a decoder input a run made to follow the source, a model a load opened. What the
worker computes for them is session_jobs.py's; these functions only write the Session's state and emit its
signals."""

from __future__ import annotations

from typing import Any

from attnlab.present.texts import draw_stream
from attnlab.session_jobs import LoadDetour, extend_by_one

# the Session (attnlab/session.py), which imports this module: named here only as what this function is handed
Session = Any


def generate_one(session: Session) -> None:
    """Append one token to `session`'s decoder input (or prompt) and re-run; a notice says why when none can be."""
    model, trace = session.model, session.trace
    if model is None or trace is None:  # both callers have a model and its trace
        return
    if session._draws is None:
        session._draws = draw_stream(trace)  # None while greedy
    step = extend_by_one(model, trace, session._draws)
    if isinstance(step, str):  # nothing to append: why
        session._generate_presses = 0
        session.notice.emit(step)
        return
    session.tgt_ids = step.ids
    session.tgt_origin = session.tgt_origin.generated(session.src)
    session.notice.emit(f"Generated “{step.piece}”")
    if model.config.arch == "decoder-only":
        session.src = step.text
    else:
        session.tgt = step.text
    session.textsChanged.emit()
    session.request_trace()


def take_followed(session: Session, src: str, tgt: str) -> None:
    """The decoder input a run made to follow source `src`: the box shows it (the follow is done unless the
    source changed again since)."""
    session.tgt, session.tgt_ids = tgt, None
    session.tgt_origin = session.tgt_origin.written(src, typed=False)
    session._follow = session._follow and src != session.src
    session.textsChanged.emit()


def accept_model(session: Session, value: Any, error: str | None) -> None:
    """A load's result (session_jobs.load_job: a Loaded tuple or a LoadDetour) taken by `session`, or its error."""
    if error is not None or value is None:
        session.modelFailed.emit(error or "the load returned nothing")
        return
    if isinstance(value, LoadDetour):
        session.request_trace()  # submitting the load dropped any waiting trace of the model that stays
        session.loadDetoured.emit(value)
        return
    model, src, tgt, path, (snapshots, problem) = value
    session.set_model(model, src, tgt, path, snapshots)
    if problem:
        session.notice.emit(f"The training snapshots beside this model were not loaded: {problem}")
