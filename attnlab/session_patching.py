"""The Session's activation patching (issue 37): a patch from the pinned run A into the current run B, and the
patching map filled row by row on the Session's worker (one job per layer, so a trace asked for meanwhile runs
between two rows and the GUI thread only draws). The words and numbers are present/patching.py's."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: present/patching.py brings torch, which the first paint does without
    from attnlab.present import patch_request, patching

# the Session (attnlab/session.py), which imports this module: named here only as what these functions are handed
Session = Any

MAP_JOB = "patchmap"  # the job kind of a map's rows


@dataclass
class MapRun:
    """A map being filled: the map, and what its rows run on (copied when it started)."""

    map: patching.PatchMap
    src: Any
    tgt: Any
    options: Any


def patch_from_pinned(session: Session, entry: str, part: str, head: int | None, position: int | None) -> bool:
    """Patch `entry` (its `part`: "head", "position", "cell" or "layer") of run B from the pinned run A, and
    re-run (from the patched layer); refused with `failed` in one line."""
    from attnlab.present import patching

    problem = patching.patch_problem(session.pinned, session.trace)
    if problem:
        session.failed.emit(problem)
        return False
    assert session.pinned is not None
    try:
        patch = patching.patch_for(session.pinned, entry, part, head, position)
    except ValueError as error:
        session.failed.emit(str(error))
        return False
    keep_unpatched(session)
    return session.set_options(patching.patched_options(session.options, patch))


def keep_unpatched(session: Session) -> None:
    """Remember run B before its first patch: the output panel compares the patched answer with it."""
    if session.trace is not None and not session.options.patch:
        session.unpatched = session.trace


def start_map(session: Session, kind: str) -> patching.PatchMap | None:
    """Start filling a patching map of `kind` ("residual", "head") for runs A (pinned) and B (current)."""
    from attnlab.present import patching
    from attnlab.present.model_info import output_vocabulary

    problem = patching.patch_problem(session.pinned, session.trace)
    if problem or session.model is None or session.pinned is None or session.trace is None:
        session.failed.emit(problem or "open a model first")
        return None
    try:
        made = patching.new_map(session.pinned, session.trace, kind, namer=output_vocabulary(session.model))
    except ValueError as error:
        session.failed.emit(str(error))
        return None
    tgt = list(session.tgt_ids) if session.tgt_ids is not None else session.tgt
    src, tgt = session.model.prompt_sides(session.src, tgt)  # as the Session's runs read them (session_jobs.py)
    session.patch_run = MapRun(made, src, tgt, session.options.replace(patch=()))
    session.patchMapChanged.emit(made)
    submit_row(session)
    return made


def submit_row(session: Session) -> None:
    """Ask the worker for the map's next row."""
    from attnlab.present import patching

    run = session.patch_run
    if run is None or run.map.finished or session.model is None:
        return
    row = run.map.done
    job = partial(patching.map_row, session.model, run.src, run.tgt, run.options, run.map.cells[row], run.map.answer)
    session._submit(MAP_JOB, lambda: (row, job()))


def accept_row(session: Session, value: tuple[int, list[float]] | None, error: str | None) -> None:
    """A row from the worker: fill it, say so, and ask for the next."""
    run = session.patch_run
    if run is None:
        return
    if error is not None or value is None:
        session.failed.emit(error or "the patching map's row returned nothing")
        return
    row, diffs = value
    run.map.fill(row, diffs)
    session.patchMapChanged.emit(run.map)
    submit_row(session)


def stop_map(session: Session) -> None:
    """Stop filling the map (its filled rows stay)."""
    session._jobs.drop(MAP_JOB)
    session.patch_run = None


def open_cell(session: Session, made: patching.PatchMap, row: int, column: int) -> bool:
    """Open a map cell's patched run: run B with that cell's patch alone (resumed at its layer)."""
    if row >= made.done:
        return False
    keep_unpatched(session)
    return session.set_options(session.options.replace(patch=(made.cells[row][column],)))


# ---- a lesson step's patch (present/patch_request.py): run A from its sentence, then B patched from it ------------
PATCH_A_JOB = "patch-a"  # the job kind of a lesson step's run A


def patch_step(session: Session, ask: patch_request.PatchAsk) -> None:
    """Run A of a lesson step's patch on the worker (run B, the step's run, is on screen); `accept_run_a` then
    pins it and patches B from it."""
    from attnlab.present.patch_request import run_a

    model = session.model
    if model is None:
        return
    tgt = list(session.tgt_ids) if session.tgt_ids is not None else session.tgt  # run B's, as typed
    options = session.options
    session._submit(PATCH_A_JOB, lambda: (ask, run_a(model, ask, tgt, options)))


def accept_run_a(session: Session, value: tuple[Any, Any] | None, error: str | None) -> None:
    """Run A from the worker: pin it as A and patch run B from it (refused with `failed` in one line)."""
    from attnlab.engine.patching import PatchError
    from attnlab.present import patching
    from attnlab.present.patch_request import patch_of

    if error is not None or value is None:
        session.failed.emit(error or "run A of the lesson's patch returned nothing")
        return
    ask, a = value
    problem = patching.patch_problem(a, session.trace)
    try:
        if problem:
            raise PatchError(f"patch from {ask.src!r}: {problem}")
        patch = patch_of(ask, a)
    except PatchError as e:
        session.failed.emit(str(e))
        return
    session.pin(a)
    keep_unpatched(session)
    session.set_options(session.options.replace(patch=(patch,)))


def drop_patch_step(session: Session) -> None:
    """Forget a lesson step's run A asked for and not yet done (the lesson moved on)."""
    session._jobs.drop(PATCH_A_JOB)


def unpatched(trace: Any) -> bool:
    """Whether `trace` (a Trace, or None) is a run without patches: a step's run B before its patch."""
    return trace is not None and not trace.options.patch
