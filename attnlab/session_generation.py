"""What a Session (attnlab/session.py) does with what comes back: one Generate press (the model's next token
appended to the decoder input, or the prompt of a decoder-only model, greedy or drawn from the run's seeded
stream), a decoder input a run made to follow the source, a model a load opened. What the worker computes for
them is session_jobs.py's; these functions only write the Session's state and emit its signals.

Generate runs the model's cached generation (LiveModel.generate: the prompt once, then one position per press
against the KV cache, engine/generation.py) and keeps each step's Trace for the timeline (`GenerationRun`).
Presses made while a step runs are done one after another, each a cached step; the whole sequence is traced
once when they are done, for the other stages. A conversation or a training snapshot re-traces the sequence
per press, as before the cache (`extend_by_one`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from attnlab.present.texts import draw_stream, ids_text
from attnlab.present.timeline import step_positions
from attnlab.session_jobs import LoadDetour, extend_by_one

GENERATE_JOB = "generate"  # the worker's job kind of one cached generation step

# the Session (attnlab/session.py), which imports this module: named here only as what this function is handed
Session = Any


@dataclass
class GenerationRun:
    """One generation of the Session: the model's cached steps (a LiveModel.generate iterator, advanced one
    step per press on the worker), the Traces of the steps done (the timeline's), and the Session's state it
    continues from (`key`: a text or option changed otherwise than by Generate starts a new one)."""

    key: tuple[Any, ...]
    source: Iterator[Any]
    steps: list[Any] = field(default_factory=list)
    finished: str = ""  # why it stopped ('' while it goes on)


def generation_key(session: Session) -> tuple[Any, ...]:
    """What a generation continues from: the model, the texts (the ids Generate made), the options."""
    ids = tuple(session.tgt_ids) if session.tgt_ids is not None else None
    return (id(session.model), session.src, session.tgt, ids, session.options)


def timeline_positions(session: Session) -> list[int]:
    """The decoder positions of the shown generation's steps (the timeline's stops); [] when the texts are not
    the generation's (edited since, or no generation)."""
    run = session.generation
    if run is None or not run.steps or run.key != generation_key(session):
        return []
    return step_positions(run.steps)


def _cached_run(session: Session) -> GenerationRun | None:
    """The generation a press continues, or a new one from the Session's texts; None where presses re-trace
    (a conversation, a training snapshot's weights, options the cache cannot serve: generation.why_not_cached)."""
    from attnlab.engine.generation import why_not_cached  # torch: not at start-up

    if session.chat is not None or session.training_step is not None:
        return None
    if why_not_cached(session.model, session.options) is not None:
        return None
    run = session.generation
    if run is not None and run.key == generation_key(session) and run.steps:
        return run
    model = session.model
    decoder_only = model.config.arch == "decoder-only"
    src, prefix = (session.src, "") if decoder_only else (session.src, session.tgt)
    source = model.generate(src, prefix, max_new_tokens=model.config.max_len, options=session.options)
    return GenerationRun(generation_key(session), source)


def _next_step(run: GenerationRun) -> Any:
    """The generation's next step (on the worker): its Trace, or None when it has stopped."""
    return next(run.source, None)


def generate_one(session: Session) -> None:
    """Append one token to `session`'s decoder input (or prompt): a cached step (the timeline keeps it), or a
    re-trace where the cache cannot serve; a notice says why when none can be appended."""
    model, trace = session.model, session.trace
    if model is None or trace is None:  # both callers have a model and its trace
        return
    run = _cached_run(session)
    if run is not None:
        if run.finished:
            session._generate_presses = 0
            session.notice.emit(run.finished)
            return
        session.generation = run
        session._submit(GENERATE_JOB, partial(_next_step, run))
        return
    if session._draws is None:
        session._draws = draw_stream(trace)  # None while greedy
    step = extend_by_one(model, trace, session._draws)
    if isinstance(step, str):  # nothing to append: why
        session._generate_presses = 0
        session.notice.emit(step)
        return
    _take_ids(session, step.ids, step.text, step.piece)
    session.request_trace()


def _take_ids(session: Session, ids: list[int], text: str, piece: str) -> None:
    """The decoder input (a decoder-only model's prompt) Generate extended to `ids`, shown as `text`."""
    session.tgt_ids = ids
    session.tgt_origin = session.tgt_origin.generated(session.src)
    session.notice.emit(f"Generated “{piece}”")
    if session.model.config.arch == "decoder-only":
        session.src = text
    else:
        session.tgt = text
    session.textsChanged.emit()


def accept_step(session: Session, step: Any, error: str | None) -> None:
    """A cached generation step back from the worker: kept for the timeline, its token appended; the next
    waiting press runs the next step, or, when none waits, the whole sequence is traced once."""
    run = session.generation
    if error is not None or run is None:
        session._generate_presses, session.generation = 0, None  # the next press starts afresh
        session.failed.emit(error or "the generation step returned nothing")
        return
    if step is None:  # the iterator had stopped
        run.finished = run.finished or "The generation has finished."
        session._generate_presses = 0
        session.notice.emit(run.finished)
        return
    run.steps.append(step)
    info, model = step.info, session.model
    tok = model.tokenizer("tgt")
    if info["finished"]:
        eos = info["next_id"] == tok.specials.eos
        run.finished = (
            "The model predicts </s>: it considers the sentence finished."
            if eos
            else f"The decoder input has reached this model's limit of {model.config.max_len} tokens."
        )
        session._generate_presses = 0
        session.notice.emit(run.finished)
    else:
        ids = list(info["ids"])  # the decoder's ids without its start token, as the box feeds them back
        _take_ids(session, ids, ids_text(tok, ids), info["next_token"])
        run.key = generation_key(session)  # the generation goes on from the texts it made
    session.timelineChanged.emit(step_positions(run.steps))
    if session._generate_presses and not run.finished:
        session._generate_presses -= 1
        generate_one(session)
    else:
        session.request_trace()  # the whole sequence once, for every other stage


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
