"""The whole model's attention tiled into one image per site kind (the model view's data), Qt-free.

Site kind "enc.self" of a 3-layer, 4-head encoder on 7 tokens becomes one [3·(7+1) − 1, 4·(7+1) − 1] image:
layer l, head h, query i, key j sits at row l·(Tq+1) + i, column h·(Tk+1) + j; the gap rows/columns between
cells are NaN (drawn transparent: the grid lines).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.views.long_map import is_long, map_shape, map_source
from attnlab.present.weight_scale import TOP_PERCENTILE, percentile_top  # noqa: F401 (TOP_PERCENTILE re-exported)

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

GAP = 1  # NaN pixels between cells
MODEL_TILES = 64  # a long input: each head's thumbnail has at most this many tiles a side
# The colour scale tops out at TOP_PERCENTILE of the weights shown (present/weight_scale.py): with 128 keys most
# weights are near 1/128 and a few near 1, so a scale up to the maximum would paint almost everything dark.


@dataclass(frozen=True)
class SiteGrid:
    kind: str  # "enc.self", "dec.self", "dec.cross"
    title: str  # "encoder self-attention"
    sites: tuple[str, ...]  # one per layer: ("enc.0.self", "enc.1.self", …)
    heads: int
    rows: int  # Tq
    cols: int  # Tk
    image: np.ndarray  # [L·(Tq+GAP) − GAP, H·(Tk+GAP) − GAP] float32, NaN in the gaps
    top: float  # the top of the colour scale (TOP_PERCENTILE of the weights shown)
    # a long input: each image cell is a tile of row_step × col_step cells, the max of them (long_map.py);
    # rows and cols then count tiles, and the queries and keys below are the first cell of a tile
    row_step: int = 1
    col_step: int = 1

    @property
    def layers(self) -> int:
        return len(self.sites)

    def row_of(self, layer: int, q: int) -> int:
        return layer * (self.rows + GAP) + q // self.row_step

    def col_of(self, head: int, k: int) -> int:
        return head * (self.cols + GAP) + k // self.col_step

    def row_centre(self, layer: int) -> float:
        return layer * (self.rows + GAP) + self.rows / 2

    def col_centre(self, head: int) -> float:
        return head * (self.cols + GAP) + self.cols / 2

    def gap_lines(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of the grid lines between cells as pairs of end points (for one line item, connect="pairs")."""
        height, width = self.image.shape
        xs, ys = [], []
        for layer in range(1, self.layers):
            y = layer * (self.rows + GAP) - GAP / 2
            xs += [0, width]
            ys += [y, y]
        for head in range(1, self.heads):
            x = head * (self.cols + GAP) - GAP / 2
            xs += [x, x]
            ys += [0, height]
        return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)

    def locate(self, y: float, x: float) -> tuple[int, int, int, int] | None:
        """(layer, head, query, key) at image coordinates (y down, x across); None in a gap or outside."""
        if y < 0 or x < 0:
            return None
        layer, q = divmod(int(y), self.rows + GAP)
        head, k = divmod(int(x), self.cols + GAP)
        if layer >= self.layers or head >= self.heads or q >= self.rows or k >= self.cols:
            return None
        return layer, head, q * self.row_step, k * self.col_step


def tile(weights: np.ndarray) -> np.ndarray:
    """[L, H, Tq, Tk] -> [L·(Tq+GAP) − GAP, H·(Tk+GAP) − GAP] with NaN gaps."""
    n_layers, n_heads, tq, tk = weights.shape
    padded = np.full((n_layers, tq + GAP, n_heads, tk + GAP), np.nan, dtype=np.float32)
    padded[:, :tq, :, :tk] = weights.transpose(0, 2, 1, 3)  # [L, Tq, H, Tk]
    return padded.reshape(n_layers * (tq + GAP), n_heads * (tk + GAP))[:-GAP, :-GAP]


def _kind_title(kind: str) -> str:
    """'dec.cross' -> 'decoder cross-attention'."""
    stack, attention = names.site_kind_parts(kind)
    return f"{words.word(stack).lower()} {words.word(attention)}"


def site_grids(trace: Trace, *, defer: bool = False) -> dict[str, SiteGrid]:
    """One SiteGrid per site kind present in the run, in names.SITE_KINDS order. `defer`: a long input's
    thumbnails are left blank (NaN, colour scale 0 … 1) for the caller to fill with `thumbnail_jobs`."""
    by_kind: dict[str, list[str]] = {}
    for site in trace.sites():
        by_kind.setdefault(names.site_kind(site), []).append(site)
    grids = {}
    for kind in names.SITE_KINDS:
        sites = by_kind.get(kind)
        if not sites:
            continue
        steps = (1, 1)
        if is_long(map_shape(trace, names.site_entry(sites[0], "weights"))):  # each head's overview tiles
            stacked, steps = _long_tiles(trace, sites, defer)  # [L, H, n_r, n_c]
        else:
            stacked = np.stack([trace[names.site_entry(s, "weights")].numpy() for s in sites])  # [L, H, Tq, Tk]
        finite = stacked[np.isfinite(stacked)]
        top = top_of(finite)
        grids[kind] = SiteGrid(
            kind,
            _kind_title(kind),
            tuple(sites),
            stacked.shape[1],
            stacked.shape[2],
            stacked.shape[3],
            tile(stacked.astype(np.float32)),
            top,
            *steps,
        )
    return grids


def top_of(finite: np.ndarray) -> float:
    """The top of the colour scale for these finite weights (TOP_PERCENTILE; 1.0 when there are none)."""
    return percentile_top(finite)


def thumbnail(trace: Trace, site: str, head: int) -> np.ndarray:
    """One head's weights as at most MODEL_TILES tiles a side, each the max of its cells (wholly blocked: NaN)."""
    piece = map_source(trace, site, "weights", head).overview(MODEL_TILES, MODEL_TILES, keep=False)
    return np.where(np.isneginf(piece.values), np.nan, piece.values).astype(np.float32)  # [n_r, n_c]


def thumbnail_jobs(trace: Trace, grid: SiteGrid) -> list[tuple[int, int, Callable[[], np.ndarray]]]:
    """(layer, head, the function that reads its thumbnail) for every head of a long input's grid."""
    return [
        (layer, head, functools.partial(thumbnail, trace, site, head))
        for layer, site in enumerate(grid.sites)
        for head in range(grid.heads)
    ]


def put(grid: SiteGrid, layer: int, head: int, tiles: np.ndarray) -> None:
    """Write one head's thumbnail [rows, cols] into the grid's image, in place."""
    r, c = grid.row_of(layer, 0), grid.col_of(head, 0)
    grid.image[r : r + grid.rows, c : c + grid.cols] = tiles


def _long_tiles(trace: Trace, sites: list[str], defer: bool) -> tuple[np.ndarray, tuple[int, int]]:
    """[L, H, n_r, n_c]: every head's thumbnail (blank when `defer`), and the cells per tile. One pass over each
    map not read before; the full maps are never held."""
    source = map_source(trace, sites[0], "weights", 0)
    s_r, s_c = source.tile_steps(MODEL_TILES, MODEL_TILES)
    tq, tk = source.shape
    n_heads = int(map_shape(trace, names.site_entry(sites[0], "weights"))[0])
    if defer:
        stacked = np.full((len(sites), n_heads, -(-tq // s_r), -(-tk // s_c)), np.nan, np.float32)
    else:
        stacked = np.stack([[thumbnail(trace, site, h) for h in range(n_heads)] for site in sites])
    return stacked, (s_r, s_c)
