"""How the all-heads grid lays out H heads: plain arithmetic in pixels, no widgets (ui/plots/head_grid.py draws).

The arrangement (1×H, 2×H/2, …) is the one whose cells are largest and squarest in the room the grid has
(`best_grid_shape`; before the grid has a size, ceil(sqrt(H)) per row: `grid_shape`), kept until another makes
cells SWITCH_GAIN larger. Each head is a title over a plot, in layout rows 2i and 2i+1 and column j+1 (column 0
holds the row axes); a row axis sits left of each grid row, a column axis under the lowest plot of each column
that reaches the last grid row, and the colour bar right of everything. Presenting, the scene is as tall as the
row floor asks (`scene_heights`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SPACING = 4  # pixels between the plots of the grid
SWITCH_GAIN = 1.08  # a new arrangement must make cells this much larger (no flicker between two near ties)
MIN_TICKED_PLOT_PX = (110, 80)  # below this many pixels per small plot, outer axes show no tick text at all
LEAST_SCENE_PX = 120  # the scene's own least height (MatrixView's)
NO_MOST = 16777215  # no most height (Qt's QWIDGETSIZE_MAX)
MIN_ROOM_PX = 50  # a scene narrower or lower than this has no size yet: the arrangement waits for one


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


@dataclass(frozen=True)
class Around:
    """What in a grid is not cells, in pixels: the row axes' width, the colour bar's width, the column axes'
    height, a head title's height, and one line of tick text."""

    left: float
    bar: float
    bottom: float
    title: float
    line: float

    @classmethod
    def guessed(cls, line: float) -> Around:
        """Before a grid is built: from the tick font's line height alone."""
        return cls(left=4 * line, bar=4 * line, bottom=3 * line, title=line + 6, line=line)

    def per_head(self) -> tuple[float, float, float, float]:
        """(fixed width, fixed height, width per column, height per row): `cell_size`'s `per_head`."""
        return self.left + self.bar + 2 * SPACING + 4, self.bottom + self.line + 4, SPACING, self.title + SPACING


def arrangement(
    n_heads: int,
    cells: tuple[int, int],
    room: tuple[float, float] | None,
    per_head: Sequence[float],
    shown: tuple[int, int],
    shown_heads: int,
) -> tuple[int, int]:
    """The arrangement for `n_heads` of `cells` (Tq, Tk) given the grid `shown` (rows, columns) of
    `shown_heads` heads: the best for `room` (None: the scene has no size yet, or is hidden), a new one only
    when it makes cells SWITCH_GAIN larger; before there is room, the one shown or ceil(sqrt(H)) per row."""
    if room is None or room[0] < MIN_ROOM_PX or room[1] < MIN_ROOM_PX:
        return shown if shown_heads == n_heads else grid_shape(n_heads)
    best = best_grid_shape(n_heads, cells, room, per_head)
    if shown_heads != n_heads or best == shown:
        return best
    new, now = (min(cell_size(shape, cells, room, per_head)) for shape in (best, shown))
    return best if new > SWITCH_GAIN * now else shown


def head_slot(head: int, ncols: int) -> tuple[int, int, int]:
    """(title's layout row, plot's layout row, layout column) of `head` in a grid of `ncols` columns."""
    i, j = divmod(head, ncols)
    return 2 * i, 2 * i + 1, j + 1


def bottom_axis_heads(n_heads: int, nrows: int, ncols: int) -> list[tuple[int, int]]:
    """(grid column, head) for each column axis: under the lowest head of each grid column, only where that
    head is in the last grid row (no axis under an empty slot)."""
    out = []
    for j in range(ncols):
        lowest = max(h for h in range(n_heads) if h % ncols == j)
        if lowest // ncols == nrows - 1:
            out.append((j, lowest))
    return out


def too_small_for_ticks(width: float, height: float, shape: tuple[int, int]) -> bool:
    """Whether a scene of `width` × `height` pixels laid out `shape` (rows, columns) leaves each small plot too
    little room for tick text (judged on the scene, not the plots, so that axis sizes cannot feed back)."""
    nrows, ncols = shape
    return width / ncols < MIN_TICKED_PLOT_PX[0] or height / nrows < MIN_TICKED_PLOT_PX[1]


def scene_heights(
    floor: float, least_floor: float, rows: int, around: float, room_below: float | None
) -> tuple[int, int]:
    """(least, most) heights of the scene, presenting, for `rows` matrix rows in all (grid rows × Tq) at
    `floor` pixels per row plus `around` pixels that are not cells: tall enough for the floor, and filling the
    room up to the same; when that would push a row of heads below `room_below` (the stage area's viewport
    under the scene's top, None: no scroll area), the rows shrink to fit, down to `least_floor` (issue 32:
    8 heads on a 768-px screen). A floor of 0 (not presenting): the scene's own least height, no most."""
    if floor <= 0 or rows <= 0:
        return LEAST_SCENE_PX, NO_MOST
    if room_below is not None:  # the most per row that keeps every head on screen, not below the least
        fit = (room_below - around) / rows
        floor = max(min(floor, least_floor), min(floor, math.floor(fit * 4) / 4))
    least = max(LEAST_SCENE_PX, math.ceil(rows * floor + around))
    return least, max(least, math.floor(rows * floor + around))
