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
from attnlab.present.views.long_attention import head_sources
from attnlab.present.views.long_map import MapSource, is_long
from attnlab.present.views.model import MessageView
from attnlab.present.views.site import SiteView, blocked_cells
from attnlab.present.weight_scale import weight_scale

HEAD_TILES = 256  # a long input: each head's overview has at most this many tiles a side
LONG_HEADS_NOTE = (
    " A long input ({tq:,} × {tk:,} cells): each pixel of a head is the largest weight of a block of {r} × {c} "
    "cells; open a head's weights step to zoom in to the exact cells."
)
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
    scale_label: str = ""  # the colour bar's name for a percentile scale (weight_scale.py)
    # a long input (long_attention.py): `weights` are each head's overview tiles of steps (rows, cols) cells
    # over a map of `cells` (Tq, Tk); `sources` read each head's exact cells
    sources: list[MapSource] | None = None
    steps: tuple[int, int] = (1, 1)
    cells: tuple[int, int] | None = None
    pending: tuple[int, ...] = ()  # heads whose tiles are not read yet (NaN): heads_view's `defer`

    kind = "heads"


def heads_view(
    trace: Trace,
    stage: Stage,
    display: ViewState,
    vocab: Callable[[int], str] | None = None,
    *,
    defer: bool = False,
) -> HeadsView | MessageView:
    """All heads of the stage's site. `defer`: a long input's heads not read before come as NaN tiles, listed
    in `pending`, for the panel to read off the GUI thread (`sources[h].overview(HEAD_TILES, HEAD_TILES)`)."""
    site = stage.site or ""
    name = names.site_entry(site, "weights")
    if name not in trace:
        return MessageView("heads", missing_message("The attention weights", [name]))
    sv = SiteView(trace, site, display, vocab)
    heads = f"all {sv.n_heads} heads" if sv.n_heads > 1 else counted(sv.n_heads, "head")
    title = f"{heads} · {sv.name} · query rows, key columns"
    if is_long((sv.tq, sv.tk)):  # each head's overview tiles, never the [H, Tq, Tk] maps
        sources = head_sources(trace, site, sv.n_heads)
        pending = tuple(h for h, source in enumerate(sources) if defer and not source.ready())
        pieces = [
            source.placeholder(HEAD_TILES, HEAD_TILES) if h in pending else source.overview(HEAD_TILES, HEAD_TILES)
            for h, source in enumerate(sources)
        ]
        tiles = np.ascontiguousarray(np.stack([p.values for p in pieces]), dtype=np.float32)  # [H, n_r, n_c]
        steps = (pieces[0].row_step, pieces[0].col_step)
        note = HEADS_NOTE + LONG_HEADS_NOTE.format(tq=sv.tq, tk=sv.tk, r=steps[0], c=steps[1])
        levels, label = weight_scale(tiles, sv.tk)  # one scale for every head (the heads compare on it)
        return HeadsView(
            title, tiles, sv.rows, sv.cols, pieces[0].masked, sv.head, sv.n_heads, note, levels, label,
            sources=sources, steps=steps, cells=(sv.tq, sv.tk), pending=pending,
        )  # fmt: skip
    weights = np.ascontiguousarray(array(trace, name))  # [H, Tq, Tk]
    levels, label = weight_scale(weights, sv.tk)
    return HeadsView(
        title,
        weights,
        sv.rows,
        sv.cols,
        blocked_cells(trace, site),
        sv.head,
        sv.n_heads,
        levels=levels,
        scale_label=label,
    )
