"""Compare two runs, A (pinned) and B (current): pair a stage's entries, take B − A where the shapes agree,
and say why not where they differ. Plain numpy on host copies; no Qt.

A stage's entries are those `stage_tensors(stage)` names. A per-head entry [H, …] is compared at one head
(the view's), so a run with 4 heads and one with 8 can still be compared head by head where the head exists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.stages import COMPARE_MODES as COMPARE_MODES  # re-exported: the view's choices
from attnlab.present.stages import MOE, NORM_COMPARE, Stage, stage_tensors

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


@dataclass(frozen=True)
class ComparedEntry:
    """One trace entry in both runs. `a`, `b`: the matrices shown ([rows, cols]; a vector is one row), None
    where a run lacks the entry. `difference` = b − a, None when it cannot be taken; `message` then says why."""

    name: str
    a: np.ndarray | None
    b: np.ndarray | None
    difference: np.ndarray | None
    message: str = ""


def shown_matrix(trace: Trace, name: str, head: int) -> np.ndarray | None:
    """The 2-D picture of `name` in `trace`: [H, R, C] -> head `head` (None if the run has no such head),
    [R, C] as it is, [N] -> one row [1, N]; None for token lists and absent entries."""
    if name not in trace:
        return None
    value = trace[name]
    if not hasattr(value, "shape"):
        return None
    array = value.float().numpy() if hasattr(value, "float") else np.asarray(value, dtype=np.float32)
    if array.ndim == 3:
        return array[head] if 0 <= head < array.shape[0] else None
    if array.ndim == 1:
        return array[None, :]
    return array if array.ndim == 2 else None


def heads_of(trace: Trace, name: str) -> int | None:
    """How many heads a per-head entry has (None for other entries)."""
    value = trace.get(name)
    return int(value.shape[0]) if hasattr(value, "shape") and len(value.shape) == 3 else None


def compare_entry(a: Trace, b: Trace, name: str, head: int) -> ComparedEntry:
    """`name` in both runs at `head`, with B − A when the shapes agree and the reason when they do not."""
    ma, mb = shown_matrix(a, name, head), shown_matrix(b, name, head)
    if ma is None or mb is None:
        return ComparedEntry(name, ma, mb, None, _missing_message(a, b, name, head, ma is None, mb is None))
    if ma.shape != mb.shape:
        return ComparedEntry(name, ma, mb, None, shape_message(name, ma.shape, mb.shape, a, b))
    return ComparedEntry(name, ma, mb, mb - ma)


def compare_names(stage: Stage, a: Trace, b: Trace) -> list[str]:
    """Every trace entry the stage's own panel draws that A or B holds: `stage_tensors`, and for a gated FFN
    also gate(x) and up(x)."""
    wanted = stage_tensors(stage)
    if stage.kind == "ffn" and stage.layer:
        wanted += [names.ffn_entry(stage.layer, part) for part in ("gate", "up")]
    return [name for name in wanted if name in a or name in b]


def compare_stage(a: Trace, b: Trace, stage: Stage, head: int) -> list[ComparedEntry]:
    """Every matrix entry of `stage` in A and B (token lists left out). Token ids get no difference (they are
    names, not amounts); a mask is compared as where it blocks (1) and where it lets through (0)."""
    entries = [compare_entry(a, b, name, head) for name in compare_names(stage, a, b)]
    if stage.kind == "tokens":
        return [replace(e, difference=None, message=NO_DIFFERENCE) for e in entries]
    if stage.kind == "mask":
        return [_blocked(e) for e in entries]
    if stage.kind in (names.LENS, MOE):
        return [_by_name(a, b, e) for e in entries]
    return entries


ID_ENTRIES = (names.LENS_IDS, "chosen")  # token and expert ids (the lens's top tokens, an MoE's chosen experts)


def _by_name(a: Trace, b: Trace, entry: ComparedEntry) -> ComparedEntry:
    """The logit lens and a mixture of experts: ids get no difference; the lens's probabilities [L + 1, T, k]
    are compared as their picture, each layer's top-1 probability [L + 1, T] (not one "head" of it)."""
    if entry.name.endswith(ID_ENTRIES):
        return replace(entry, difference=None, message=ID_NO_DIFFERENCE)
    if entry.name != names.LENS_PROBS:
        return entry
    ma, mb = (t[names.LENS_PROBS][:, :, 0].numpy() if names.LENS_PROBS in t else None for t in (a, b))
    if ma is None or mb is None or ma.shape != mb.shape:
        return replace(entry, a=ma, b=mb, difference=None, message=entry.message or "The two lenses differ in shape.")
    return ComparedEntry(entry.name, ma, mb, mb - ma)


NO_DIFFERENCE = "Token ids are names, not amounts: B − A of two ids means nothing, so only A and B are shown."
ID_NO_DIFFERENCE = (
    "Ids (tokens, experts) are names, not amounts: B − A of two ids means nothing; only A and B are shown."
)
# Stages whose own picture is not a matrix: what the compare view shows instead, said on the panel.
FORM_NOTES = {
    "lines": "The token lines are compared as the shown head's weight matrix (a line's thickness is its weight; "
    "a difference has no line to draw).",
    "scale_why": "The ÷√dₖ histograms and entropies are compared through what they are made of: the shown "
    "head's raw and scaled scores.",
    names.LENS: "The logit lens is compared as each layer's top-1 probability; its top tokens are ids, shown "
    "without a difference.",
    NORM_COMPARE: "The LayerNorm-vs-BatchNorm picture (with its batch slider) has no A | B form; compared here: "
    "the norm's input x.",
}


def _blocked(entry: ComparedEntry) -> ComparedEntry:
    """A mask entry as 1 where it blocks (−inf) and 0 where it lets through: −inf − (−inf) is not a number."""
    a, b = ((np.isneginf(m).astype(np.float32) if m is not None else None) for m in (entry.a, entry.b))
    if a is None or b is None or a.shape != b.shape:
        return replace(entry, a=a, b=b)
    return ComparedEntry(entry.name, a, b, b - a, "")


def compare_heads(a: Trace, b: Trace, site: str) -> ComparedEntry:
    """All heads' weights of `site` [H, Tq, Tk] in A and B, with B − A when the head counts and lengths
    agree (the all-heads grid drawn three times)."""
    name = names.site_entry(site, "weights")
    ma, mb = ((t[name].float().numpy() if name in t else None) for t in (a, b))
    if ma is None or mb is None:
        return ComparedEntry(name, ma, mb, None, _missing_message(a, b, name, 0, ma is None, mb is None))
    if ma.shape != mb.shape:
        return ComparedEntry(name, ma, mb, None, shape_message(name, ma.shape, mb.shape, a, b))
    return ComparedEntry(name, ma, mb, mb - ma)


def _missing_message(a: Trace, b: Trace, name: str, head: int, a_missing: bool, b_missing: bool) -> str:
    which = "A and B" if a_missing and b_missing else ("A" if a_missing else "B")
    heads = [heads_of(t, name) for t in (a, b)]
    if any(h is not None and head >= h for h in heads):
        counts = ", ".join(f"{label} has {h}" for label, h in zip("AB", heads, strict=True) if h is not None)
        return f"{name}: {words.head_words(head)} is not in {which} ({counts} heads); pick a head both have."
    return f"{name} is not in run {which}: the two runs do not share this step, so there is nothing to subtract."


def shape_message(name: str, shape_a: tuple, shape_b: tuple, a: Trace | None = None, b: Trace | None = None) -> str:
    """Why B − A cannot be taken: what differs, in words a student reads."""
    size = " × ".join
    text = f"{name}: A is {size(map(str, shape_a))}, B is {size(map(str, shape_b))}"
    lengths = [_token_counts(t) for t in (a, b)] if a is not None and b is not None else None
    if lengths and lengths[0] != lengths[1]:
        reason = "the two runs have different sentence lengths"
    elif a is not None and b is not None and a.n_heads != b.n_heads:
        reason = f"the head count differs ({a.n_heads} in A, {b.n_heads} in B), and with it the head size"
    else:
        reason = "the shapes differ"
    return f"{text}: {reason}, so B − A cannot be taken cell by cell."


def _token_counts(trace: Trace) -> tuple[int, ...]:
    return tuple(len(trace.get(names.side_entry(side, "tokens")) or []) for side in names.SIDES)


def shared_range(a: np.ndarray | None, b: np.ndarray | None) -> tuple[float, float]:
    """One colour range for A and B: from the smaller minimum to the larger maximum of the finite values."""
    values = [m[np.isfinite(m)] for m in (a, b) if m is not None]
    values = [v for v in values if v.size]
    if not values:
        return 0.0, 1.0
    lo, hi = min(float(v.min()) for v in values), max(float(v.max()) for v in values)
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)


def symmetric_range(difference: np.ndarray | None) -> tuple[float, float]:
    """A diverging scale centred on 0: ±(the largest finite |B − A|)."""
    if difference is None:
        return -1.0, 1.0
    finite = np.abs(difference[np.isfinite(difference)])
    top = float(finite.max()) if finite.size else 0.0
    return (-top, top) if top > 0 else (-1.0, 1.0)


def describe_run(trace: Trace) -> str:
    """A one-line label of a run for the A/B captions: the sentence and the toggles that differ from the
    defaults."""
    from attnlab.engine.options import RunOptions

    tokens = trace.get(names.side_entry("src", "tokens")) or []
    sentence = " ".join(str(t) for t in tokens)
    options = trace.options
    changed = sorted(RunOptions().changed_fields(options) - {"norm", "n_heads", "device", "record"})
    toggles = f"; changed: {', '.join(changed)}" if changed else ""
    heads = f"{options.heads} heads, {'pre' if options.norm_first else 'post'}-norm"
    return f"“{sentence}” ({heads}{toggles})"


# site entries whose columns are the keys
_KEY_STEPS = ("scores", "scaled", "bias", "biased", "mask", "masked", "weights")


def axis_labels(trace: Trace, name: str, shape: tuple[int, ...]) -> tuple[list[str] | None, list[str] | None]:
    """Token labels for the rows (and, for attention matrices, the columns) of `name`'s picture, where the
    counts match the run's tokens; None where they do not (feature columns, ids)."""
    from attnlab.engine import names

    side = names.stack_side(names.stack_of(name)) if names.stack_of(name) in ("enc", "dec") else None
    tokens = {s: list(trace.get(names.side_entry(s, "tokens")) or []) for s in names.SIDES}
    if side is None:
        side = names.side_of(name)
    rows = tokens.get(side or "", [])
    rows_out = [str(t) for t in rows] if len(rows) == shape[0] else None
    cols_out = None
    site = names.site_of(name)
    if site is not None and names.step_of(name) in _KEY_STEPS:
        keys = tokens["src"] if names.site_kind(site) == "dec.cross" else rows
        cols_out = [str(t) for t in keys] if len(keys) == shape[1] else None
    return rows_out, cols_out
