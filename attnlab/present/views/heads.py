"""Every head of one attention site at once, as plain data: the [H, Tq, Tk] weights with both axes' token
labels, the blocked cells, the chosen head and the sentences."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing_message
from attnlab.present.stages import Stage, ViewState
from attnlab.present.texts import counted
from attnlab.present.views.model import MessageView
from attnlab.present.views.site import SiteView, blocked_cells

HEADS_NOTE = (
    "Each head has its own W_Q, W_K, W_V slice and so its own pattern. "
    "Click a head to select it for the other steps (orange frame)."
)


@dataclass(frozen=True)
class HeadsView:
    title: str
    weights: np.ndarray  # [H, Tq, Tk] float32, C-contiguous
    rows: list[str] | None
    cols: list[str] | None
    masked: np.ndarray | None  # bool [Tq, Tk]: blocked cells, the same for every head
    head: int  # the chosen head (its frame is drawn)
    n_heads: int
    note: str = HEADS_NOTE
    levels: tuple[float, float] = (0.0, 1.0)

    kind = "heads"


def heads_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> HeadsView | MessageView:
    site = stage.site or ""
    name = names.site_entry(site, "weights")
    if name not in trace:
        return MessageView("heads", missing_message("The attention weights", [name]))
    sv = SiteView(trace, site, display, vocab)
    weights = np.ascontiguousarray(array(trace, name))  # [H, Tq, Tk]
    heads = f"all {sv.n_heads} heads" if sv.n_heads > 1 else counted(sv.n_heads, "head")
    title = f"{heads} · {sv.name} · query rows, key columns"
    return HeadsView(title, weights, sv.rows, sv.cols, blocked_cells(trace, site), sv.head, sv.n_heads)
