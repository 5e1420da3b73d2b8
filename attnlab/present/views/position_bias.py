"""The position-bias stage of a site as plain data: the bias B [Tq, Tk] of the chosen head (ALiBi: m_h · j;
T5's relative buckets: b_h[bucket(j − i)], with the bucket of every cell beside it), its slope or range and
what a cell is. The scaled + bias map is one of the score maps (views/attention.map_view)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing, missing_message
from attnlab.present.position_bias import TITLES
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view
from attnlab.present.views.site import SiteView

OFF = "Positions are switched off in this run: no bias is added, and the model reads the sentence as a bag of words."


@dataclass(frozen=True)
class BiasView:
    """The chosen head's bias map and, for a bucketed bias, the bucket of every (query, key) cell."""

    matrix: MatrixView  # B[h] [Tq, Tk]
    buckets: MatrixView | None  # bucket(j − i) [Tq, Tk] (T5's relative buckets), None for ALiBi
    note: str
    head: int
    n_heads: int

    kind = "bias"


def bias_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> BiasView | MessageView:
    """B[h] [Tq, Tk] of the chosen head, the cells the mask will block hatched."""
    site = stage.site or ""
    bias_name = names.bias_entries(site)[0]
    if bias_name not in trace:
        positions_off = not trace.options.positional and trace.config.position_bias != "none"
        return MessageView("bias", OFF if positions_off else missing_message("The position bias", [bias_name]))
    lost = missing(trace, [names.site_entry(site, "weights")])
    if lost:
        return MessageView("bias", missing_message("The position bias", lost))
    sv = SiteView(trace, site, display, vocab)
    matrix = array(trace, bias_name)[sv.head]  # [Tq, Tk]
    title = TITLES.get(trace.config.position_bias, {}).get("bias", "position bias B")
    shown = matrix_view(
        bias_name,
        matrix,
        sv.rows,
        f"{title} · {sv.name} · {sv.head_text}",
        cols=sv.cols,
        symmetric=None,
        axes=(sv.query_axis, sv.key_axis),
    )
    buckets = bucket_view(trace, site, sv, matrix.shape) if trace.config.position_bias == "t5" else None
    return BiasView(shown, buckets, bias_note(trace, matrix, sv.head), sv.head, sv.n_heads)


def bucket_view(trace: Trace, site: str, sv: SiteView, shape: tuple[int, int]) -> MatrixView:
    """The bucket of every (query i, key j) of a "t5" bias: the rows of the learned table the bias reads."""
    from attnlab.engine.position_bias import relative_bucket

    config = trace.config
    Tq, Tk = shape
    stack = names.stack_of(site)
    buckets = relative_bucket(Tq, Tk, stack == "enc", config.relative_buckets, config.relative_max_distance)
    direction = "both ways" if stack == "enc" else "keys before the query only"
    title = f"bucket(j − i) · {config.relative_buckets} buckets, {direction}"
    return matrix_view(
        names.bias_entries(site)[0] + ".buckets",
        buckets.numpy(),
        sv.rows,
        title,
        cols=sv.cols,
        symmetric=None,
        axes=(sv.query_axis, sv.key_axis),
    )


def bias_note(trace: Trace, matrix: np.ndarray, head: int) -> str:
    """The sentence under the map: the head's slope (ALiBi: the step from one key to the next)."""
    if trace.config.position_bias == "alibi" and matrix.shape[1] > 1:
        slope = float(matrix[0, 1] - matrix[0, 0])  # m_h: B[h, i, 1] − B[h, i, 0]
        return (
            f"Head {head + 1}: slope m = {slope:.4g}. Key j adds m · j = {slope:.4g} · j to every query's score "
            f"(each row the same, up to {float(matrix[0, -1]):.3g} at the last key). Within a row this is "
            "−m · (i − j) shifted by m · i: the softmax sees the same thing."
        )
    return (
        f"Head {head + 1}: the learned numbers of the buckets its cells fall in range from {float(matrix.min()):.3g} "
        f"to {float(matrix.max()):.3g}; cells with the same j − i (one diagonal) get the same number."
    )
