"""The "LayerNorm vs BatchNorm" stage as plain data: both norms (without γ, β) on the input of an add & norm
step, their statistics, and the sentence that goes with the batch-length experiment (present/norm_compare.py
computes the numbers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, layer_name, layer_side, missing, missing_message, tokens
from attnlab.present.norm_compare import LengthSweep, NormComparison, compare_norms
from attnlab.present.stages import NORM_COMPARE, Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view


@dataclass(frozen=True)
class NormCompareView:
    heading: str
    ln: MatrixView  # LayerNorm(x) [T, d]
    bn: MatrixView  # BatchNorm(x) [T, d]
    comparison: NormComparison  # x and both norms' statistics: [T] per token, [d] per feature
    tokens: list[str] | None

    kind = NORM_COMPARE


def norm_compare_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> NormCompareView | MessageView:
    layer, n = stage.layer or "", stage.norm or 1
    name = names.norm_entry(names.norm(layer, n), "in")
    if missing(trace, [name]):
        return MessageView(NORM_COMPARE, missing_message("The input of this add & norm step", [name]))
    x = array(trace, name)  # [T, d]
    cmp = compare_norms(x)
    labels = tokens(trace, layer_side(layer), x.shape[0])
    return NormCompareView(
        f"LayerNorm vs BatchNorm on the input of add & norm {n} · {layer_name(layer)} (without γ, β)",
        matrix_view(name, cmp.ln_out, labels, "LayerNorm(x): each row (token) normalised"),
        matrix_view(name, cmp.bn_out, labels, "BatchNorm(x): each column (feature) normalised"),
        cmp,
        labels,
    )


def sweep_note(sweep: LengthSweep, length: int, labels: list[str] | None) -> str:
    """The sentence under the batch-length experiment: how far each norm's output of the chosen token moved."""
    i = length - (sweep.token + 1)
    word = f" ({labels[sweep.token]})" if labels else ""
    return (
        f"Token {sweep.token}{word} with a batch of the first {length} tokens: its LayerNorm output changed by at "
        f"most {sweep.ln_change[i]:.3g} against the whole sentence's, its BatchNorm output by "
        f"{sweep.bn_change[i]:.3g}. BatchNorm's statistics come from the neighbours; LayerNorm's from the "
        "token alone."
    )
