"""Activation patching in words and numbers (issue 37): the patch a drag from A onto B or a menu item asks for,
the answer's logit difference, and the patching map (layers × positions or layers × heads) as it fills.

Run A is the pinned run (Session.pin), run B the current one. A patch replaces an entry of B with A's value
(engine/patching.py); the output panel shows logit(correct) − logit(wrong) in A, B and the patched run, and a
map cell shows the normalised recovery (patched − B) / (A − B): 0 where the patch changes nothing, 1 where
it gives back A's answer. Qt-free; the widgets read only what these functions return.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.engine.patch_sweep import MAP_KINDS, cells_of, check_pair, map_stack, patch_from, same_run_shape
from attnlab.engine.patching import Patch, PatchError, has_heads, logit_difference, patchable

Namer = Callable[[int], str]  # token id -> its text

if TYPE_CHECKING:
    from torch import Tensor

    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

# the context menu's items: (part, words); part says which of head / position the patch keeps
MENU_PARTS = (
    ("head", "Patch this head from A"),
    ("position", "Patch this position from A"),
    ("layer", "Patch this layer from A"),
)


@dataclass(frozen=True)
class Answer:
    """The two tokens whose logit difference the output panel follows (ids and their text), at `position`."""

    correct: int
    wrong: int
    correct_text: str
    wrong_text: str
    position: int = -1


def default_answer(a: Trace, b: Trace, namer: Namer | None = None, position: int = -1) -> Answer:
    """A's top token (correct) against B's top token (wrong) at `position` (the last by default); `namer`: id ->
    token text (present/model_info.output_vocabulary)."""
    top_a = int(a[names.LOGITS][position].argmax())
    top_b = int(b[names.LOGITS][position].argmax())
    return answer_of(top_a, top_b, namer, position)


def answer_of(correct: int, wrong: int, namer: Namer | None = None, position: int = -1) -> Answer:
    """The answer the person picked: two token ids (named by `namer` when given) at `position`."""
    return Answer(correct, wrong, token_text(namer, correct), token_text(namer, wrong), position)


def token_text(namer: Namer | None, token: int) -> str:
    """`token`'s text, quoted ('#id' when no tokenizer names it)."""
    return repr(namer(token)) if namer is not None else f"#{token}"


def logit_diff(trace: Trace, answer: Answer) -> float:
    """logit(correct) − logit(wrong) of `trace` at the answer's position."""
    return logit_difference(trace[names.LOGITS], answer.correct, answer.wrong, answer.position)


def recovery(patched: float, clean: float, corrupted: float) -> float:
    """(patched − B) / (A − B): how much of A's logit difference the patch gives back (NaN when A = B)."""
    span = clean - corrupted
    return (patched - corrupted) / span if abs(span) > 1e-9 else math.nan


def answer_text(a: Trace, b: Trace, patched: Trace | None, answer: Answer) -> str:
    """The output panel's line: the logit difference in A, B and the patched run, and what the patch changed."""
    la, lb = logit_diff(a, answer), logit_diff(b, answer)
    head = f"logit({answer.correct_text}) − logit({answer.wrong_text}): A {la:+.3f}, B {lb:+.3f}"
    if patched is None or not patched.options.patch:
        return head
    lp = logit_diff(patched, answer)
    share = recovery(lp, la, lb)
    recovered = "" if math.isnan(share) else f", {share:.0%} of A's"
    return f"{head}, patched {lp:+.3f} (change {lp - lb:+.3f}{recovered})"


def patched_answer_line(a: Trace, b: Trace, unpatched: Trace | None, namer: Namer | None = None) -> str:
    """The output panel's line for a patched run B: the answer's logit difference in A, in B before the patch
    (`unpatched`) and patched, A's top token against B's ('' when B is not patched or `unpatched` does not pair)."""
    if not b.options.patch or unpatched is None or unpatched.options.patch or same_run_shape(unpatched, b):
        return ""
    return answer_text(a, unpatched, b, default_answer(a, unpatched, namer)) + f" — patched: {patch_words(b.options)}"


def patch_problem(a: Trace | None, b: Trace | None) -> str:
    """Why no patch can go from A to B ('' when it can), one line."""
    if a is None:
        return "pin a run as A first (Ctrl+P): a patch takes A's values"
    if b is None:
        return "run B first"
    try:
        check_pair(a, b)
    except PatchError as error:
        return str(error)
    return ""


def patch_for(a: Trace, entry: str, part: str, head: int | None, position: int | None) -> Patch:
    """The patch a menu item or a drop asks for: `part` "head" (that head, every position), "position" (that
    position, every head), "cell" (both), "layer" (the whole layer's output row at that position, or all of
    it when no position is given)."""
    if part == "layer":
        layer_name = names.layer_of(entry)
        if layer_name is None:
            raise PatchError(f"{entry!r} lies in no layer")
        return patch_from(a, names.layer_out(layer_name), None, position)
    if not patchable(entry):
        raise PatchError(f"{entry!r} cannot be patched; drag a Q, K, V, context, output or FFN output cell")
    keeps_head = has_heads(entry) and part in ("head", "cell")
    return patch_from(a, entry, head if keeps_head else None, position if part in ("position", "cell") else None)


def patched_options(options: RunOptions, patch: Patch) -> RunOptions:
    """`options` with `patch` added (a patch of the same entry and part replaces the earlier one)."""
    kept = tuple(p for p in options.patch if (p.entry, p.head, p.position) != (patch.entry, patch.head, patch.position))
    return options.replace(patch=(*kept, patch))


def patch_words(options: RunOptions) -> str:
    """What is patched, for the banner and the status bar ('' when nothing)."""
    return "; ".join(p.words() for p in options.patch)


@dataclass
class PatchMap:
    """A patching map as it fills: cells[layer][column] (the patches), values (the recovery; NaN until
    computed), the logit differences of A and B it is normalised by, and the axis labels."""

    kind: str
    cells: list[list[Patch]]
    clean: float
    corrupted: float
    answer: Answer
    rows: list[str]
    columns: list[str]
    values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    done: int = 0  # rows filled

    def __post_init__(self) -> None:
        if self.values.size == 0:
            self.values = np.full((len(self.cells), len(self.cells[0]) if self.cells else 0), np.nan)

    @property
    def finished(self) -> bool:
        return self.done >= len(self.cells)

    def title(self) -> str:
        what = {"residual": "residual stream (layer output) × position", "cross": "cross-attention head output × head"}
        what_text = what.get(self.kind, "head output × head")
        answer = f"logit({self.answer.correct_text}) − logit({self.answer.wrong_text})"
        return (
            f"Patching map, {what_text}: recovery of {answer}, A {self.clean:+.3f}, B {self.corrupted:+.3f}; "
            f"{self.done} of {len(self.cells)} layers"
        )

    def fill(self, row: int, logit_diffs: list[float]) -> None:
        """Row `row`'s cells from their patched runs' logit differences."""
        self.values[row] = [recovery(v, self.clean, self.corrupted) for v in logit_diffs]
        self.done = max(self.done, row + 1)

    def cell_text(self, row: int, column: int) -> str:
        value = self.values[row, column]
        shown = "not yet computed" if np.isnan(value) else f"recovery {value:.0%}"
        return f"{self.cells[row][column].words()}: {shown}"


def new_map(a: Trace, b: Trace, kind: str, answer: Answer | None = None, namer: Namer | None = None) -> PatchMap:
    """The empty map of `kind` ("residual" or "head") for runs A and B (PatchError when they do not pair)."""
    if kind not in MAP_KINDS:
        raise PatchError(f"a patching map sweeps one of {', '.join(MAP_KINDS)}, not {kind!r}")
    check_pair(a, b)
    answer = answer or default_answer(a, b, namer)
    cells = cells_of(a, kind)
    stack = map_stack(a)
    rows = [names.layer(stack, i) for i in range(len(cells))]
    if kind == "residual":
        tokens = a.get(names.side_entry(names.stack_side(stack), "tokens")) or []
        columns = [f"{p} {tokens[p]}" if p < len(tokens) else str(p) for p in range(len(cells[0]))]
    else:
        columns = [f"head {h + 1}" for h in range(len(cells[0]))]
    if kind == "cross":
        rows = [names.site(r, "cross") for r in rows]
    return PatchMap(kind, cells, logit_diff(a, answer), logit_diff(b, answer), answer, rows, columns)


def row_logit_diffs(logits_rows: Iterable[Tensor], answer: Answer) -> list[float]:
    """The logit differences of one row's patched runs' logits ([T, V] each, read one at a time)."""
    return [logit_difference(lg, answer.correct, answer.wrong, answer.position) for lg in logits_rows]


__all__ = ["MENU_PARTS", "Answer", "PatchMap", "new_map", "patch_for", "patched_options"]


def map_row(
    model: LiveModel, src: object, tgt: object, options: RunOptions, cells: list[Patch], answer: Answer
) -> list[float]:
    """The logit differences of one map row's patched runs (worker thread): each resumed at its layer."""
    from attnlab.engine.patch_sweep import patched_logits

    base = options.replace(patch=())
    logits = patched_logits(model, src, tgt, base, cells)  # type: ignore[arg-type]
    return row_logit_diffs(logits, answer)  # one run's [T, V] at a time, never the row's cells × T × V
