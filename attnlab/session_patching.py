"""The Session's activation patching (issue 37): a patch from the pinned run A into the current run B, and the
patching map filled row by row on the Session's worker (one job per layer, so a trace asked for meanwhile runs
between two rows and the GUI thread only draws). The words and numbers are present/patching.py's."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: present/patching.py brings torch, which the first paint does without
    from attnlab.present import patching

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
