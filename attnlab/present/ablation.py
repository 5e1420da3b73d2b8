"""What an ablation (or any second run) did to the next-token distribution: before → after for the tokens
either run ranks in its top k, and the token that flips, if the most likely one changed. Plain numpy; no Qt.

The "before" run is the same options without the ablation (`baseline_options`), run on the worker thread by
the session (`baseline_probs`) and carried in `trace.info[BASELINE_PROBS]`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnlab.engine import names
from attnlab.present import words

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel, Prompt
    from attnlab.engine.options import RunOptions

BASELINE_PROBS = "ablation_baseline_probs"  # trace.info key: the un-ablated run's probabilities [T, V]


@dataclass(frozen=True)
class DistributionChange:
    """Probabilities of the same position in two runs. `ids`: B's top k then A's top-k tokens B lacks (so
    nothing either run ranks high is hidden); `before`/`after` their probabilities; `flipped` = (A's most
    likely id, B's) when they differ, else None."""

    ids: list[int]
    before: np.ndarray
    after: np.ndarray
    top_before: list[int]
    top_after: list[int]
    flipped: tuple[int, int] | None


def ranked(row: np.ndarray, k: int) -> list[int]:
    """Indices of the k largest values, largest first (ties: lower id first)."""
    k = max(1, min(int(k), row.shape[0]))
    return [int(i) for i in np.lexsort((np.arange(row.shape[0]), -row))[:k]]


def distribution_change(before: np.ndarray, after: np.ndarray, k: int) -> DistributionChange:
    """before, after [V]: one position's probabilities in run A and run B."""
    top_before, top_after = ranked(before, k), ranked(after, k)
    ids = top_after + [i for i in top_before if i not in top_after]
    flipped = None if top_before[0] == top_after[0] else (top_before[0], top_after[0])
    return DistributionChange(ids, before[ids], after[ids], top_before, top_after, flipped)


def baseline_options(options: RunOptions) -> RunOptions:
    """The same run without any ablation, on the fast path (it only feeds the output comparison)."""
    return options.replace(ablate=(), record=False)


def baseline_probs(model: LiveModel, src: Prompt, tgt: Prompt, options: RunOptions) -> Any:
    """The un-ablated run's output probabilities [T, V] (host), or None when nothing is ablated. Run it
    before the ablated trace: the model keeps the last run for temperature-only changes."""
    if not options.ablate:
        return None
    return model.trace(src, tgt, baseline_options(options))[names.PROBS]


def ablation_words(ablate: Iterable[tuple[str, int, str]]) -> str:
    """'head 2 of encoder layer 1 self-attention zeroed; …' (trace head 1 of enc.0.self: people count from 1)"""
    parts = []
    for site, head, mode in ablate:
        what = "zeroed" if mode == "zero" else "replaced by its mean over positions"
        parts.append(f"{words.head_words(head)} of {words.site_full_words(site)} {what}")
    return "; ".join(parts)


def change_text(change: DistributionChange, name: Callable[[int], str], shown: int = 5) -> str:
    """'“chat” 41.2% → 12.0%, …  The most likely token flips from “chat” to “noir”.' (plain text)"""
    rows = [
        f"“{name(i)}” {b:.1%} → {a:.1%}"
        for i, b, a in zip(change.ids[:shown], change.before[:shown], change.after[:shown], strict=True)
    ]
    text = ", ".join(rows)
    if change.flipped:
        old, new = change.flipped
        return f"{text}. The most likely token flips from “{name(old)}” to “{name(new)}”."
    return f"{text}. The most likely token stays “{name(change.top_after[0])}”."
