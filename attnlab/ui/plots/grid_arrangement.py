"""How the all-heads grid lays out H heads: ceil(sqrt(H)) per row by default, or the arrangement (1×H, 2×H/2, …)
whose cells are largest and squarest in the room the grid has. Plain arithmetic, no widgets (HeadGrid uses it)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def grid_shape(n_heads: int) -> tuple[int, int]:
    """(rows, columns) of the grid for *n_heads*: ceil(sqrt(H)) columns."""
    if n_heads <= 0:
        return 0, 0
    ncols = math.ceil(math.sqrt(n_heads))
    return math.ceil(n_heads / ncols), ncols


def cell_size(
    shape: tuple[int, int], cells: tuple[int, int], room: tuple[float, float], per_head: Sequence[float]
) -> tuple[float, float]:
    """(width, height) in pixels of one matrix cell when heads of `cells` (Tq, Tk) are laid out `shape` (rows,
    columns) in `room` (width, height); `per_head` = (fixed width, fixed height, width per column, height per
    row) that is not cells: axes and colour bar, titles and gaps."""
    (nrows, ncols), (tq, tk) = shape, cells
    fixed_w, fixed_h, col_w, row_h = per_head
    width = (room[0] - fixed_w - ncols * col_w) / max(ncols * tk, 1)
    height = (room[1] - fixed_h - nrows * row_h) / max(nrows * tq, 1)
    return width, height


def best_grid_shape(
    n_heads: int, cells: tuple[int, int], room: tuple[float, float], per_head: Sequence[float]
) -> tuple[int, int]:
    """The arrangement (1×H, 2×ceil(H/2), …) whose cells are largest with the squarest aspect: the one that
    maximises min(cell width, cell height) (ties: the taller cells)."""
    if n_heads <= 0:
        return 0, 0
    shapes = []
    for nrows in range(1, n_heads + 1):
        ncols = math.ceil(n_heads / nrows)
        if (math.ceil(n_heads / ncols), ncols) == (nrows, ncols):  # no empty grid row
            shapes.append((nrows, ncols))

    def score(shape: tuple[int, int]) -> tuple[float, float]:
        w, h = cell_size(shape, cells, room, per_head)
        return min(w, h), h

    return max(shapes, key=score)
