"""The position-bias stage of a site as plain data: the bias B [Tq, Tk] of the chosen head (ALiBi: m_h · j),
its slope and what a cell is. The scaled + bias map is one of the score maps (views/attention.map_view)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing, missing_message
from attnlab.present.position_bias import TITLES
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.attention import MapView
from attnlab.present.views.model import MessageView, matrix_view
from attnlab.present.views.site import SiteView

OFF = "Positions are switched off in this run: no bias is added, and the model reads the sentence as a bag of words."


def bias_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> MapView | MessageView:
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
    return MapView("bias", shown, bias_note(trace, matrix, sv.head), sv.head, sv.n_heads)


def bias_note(trace: Trace, matrix: np.ndarray, head: int) -> str:
    """The sentence under the map: the head's slope (ALiBi: the step from one key to the next)."""
    if trace.config.position_bias == "alibi" and matrix.shape[1] > 1:
        slope = float(matrix[0, 1] - matrix[0, 0])  # m_h: B[h, i, 1] − B[h, i, 0]
        return (
            f"Head {head + 1}: slope m = {slope:.4g}. Key j adds m · j = {slope:.4g} · j to every query's score "
            f"(each row the same, up to {float(matrix[0, -1]):.3g} at the last key). Within a row this is "
            "−m · (i − j) shifted by m · i: the softmax sees the same thing."
        )
    return f"Values range from {float(matrix.min()):.3g} to {float(matrix.max()):.3g}."
