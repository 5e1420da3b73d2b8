"""HeadGrid: small multiples of attention heads in one pyqtgraph scene.

One GraphicsLayoutWidget holds H ViewBoxes (one ImageItem each), a "head h" title above each, shared row/column
tick axes on the outer edge only, and one colour bar that drives every image (one shared colour scale). Where
each goes, and which arrangement (1×H, 2×H/2, …) fits the room, is plain arithmetic in
present/head_grid_layout.py; this widget measures the room and places the items. The grid is rebuilt only when
H or the arrangement changes; other updates just swap image data. Presenting, each head keeps zoom.row_floor
(ROW_PX_GRID) pixels per row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.present import words
from attnlab.present.head_grid_layout import (
    LEAST_SCENE_PX,
    NO_MOST,
    Around,
    arrangement,
    best_grid_shape,
    cell_size,
    grid_shape,
    scene_heights,
    too_small_for_ticks,
)
from attnlab.ui.plots import head_grid_parts as parts
from attnlab.ui.plots.axes import CategoryAxis, MaskBackground, tick_font
from attnlab.ui.plots.colormaps import DEFAULT_DIVERGING, DEFAULT_SEQUENTIAL
from attnlab.ui.plots.head_grid_parts import Prepared, prepare_heads
from attnlab.ui.plots.matrix_data import ValueFormat
from attnlab.ui.plots.matrix_view import MatrixView
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.views.long_map import MapSource

__all__ = ["HeadGrid", "best_grid_shape", "cell_size", "grid_shape"]


class HeadGrid(MatrixView):
    """H attention maps [H, Tq, Tk] as a grid of small heatmaps sharing one colour scale.

    Signals:
        headClicked(int head): left click on a head's plot or its title (e.g. to zoom in).
        headMenuRequested(int head, QPoint global position): right click on a head (its ablation menu).
    """

    headClicked = Signal(int)
    headMenuRequested = Signal(int, QtCore.QPoint)

    HINT = "Hover a head to read values; click a head to zoom in."

    def __init__(
        self,
        parent: QtWidgets.QWidget | None = None,
        *,
        colormap: str = DEFAULT_SEQUENTIAL,
        signed_colormap: str | None = DEFAULT_DIVERGING,
        value_format: ValueFormat = "{:.3f}",
        row_floor: float = zoom.ROW_PX_GRID,
    ) -> None:
        super().__init__(parent, colormap=colormap, signed_colormap=signed_colormap, value_format=value_format)
        self.readout_roles = ("query", "key", "weight")  # every head's attention weights
        self._cells: tuple[int, int] | None = None  # (Tq, Tk)
        self._arranged: tuple[int, int] = (0, 0)  # (rows, columns) of the grid shown
        self._row_floor = row_floor  # the least pixels per row presenting, before zoom (zoom.row_floor)
        self._last_heads: tuple[Any, ...] | None = None  # set_heads' arguments, to lay them out again
        self._sources: list[MapSource] | None = None  # a long input's heads, read cell by cell (set_heads)
        self._loading = 0  # heads of a long input still being read (set_loading)
        self._hovered: tuple[object, str] = (None, "")  # (sources, (head, row, col)) -> its readout
        self._rearranging = False
        self._selected: int | None = None
        self._n_heads = 0
        self._styled: int | None = None  # the head drawn as selected in the grid now shown
        self.rebuild_count = 0  # how many times the grid layout was (re)built

        self._views: list[pg.ViewBox] = []
        self._images: list[pg.ImageItem] = []
        self._mask_bgs: list[MaskBackground] = []
        self._head_titles: list[pg.LabelItem] = []
        self._left_axes: list[CategoryAxis] = []
        self._bottom_axes: list[CategoryAxis] = []
        self._bar: pg.ColorBarItem | None = None
        # One scene per head count seen, kept: toggling 4 <-> 8 heads swaps pages instead of rebuilding.
        self._grids: dict[tuple[int, int, int], dict[str, Any]] = {}  # (H, rows, columns) -> the grid
        self._glw = self._new_grid_scene()
        self._stack.setCurrentWidget(self._message)

    # ------------------------------------------------------------------ public API
    def set_heads(
        self,
        weights: np.ndarray,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
        masked: np.ndarray | None = None,
        title: str = "",
        *,
        levels: tuple[float, float] | None = None,
        symmetric: bool | None = None,
        cells: tuple[int, int] | None = None,
        steps: tuple[int, int] = (1, 1),
        sources: Sequence[MapSource] | None = None,
    ) -> None:
        """Show *weights* [H, Tq, Tk], one small heatmap per head, one shared colour scale.

        A long input: *weights* [H, n_r, n_c] are overview tiles of *steps* (rows, cols) cells each over maps of
        *cells* (Tq, Tk) cells (labels and *masked* then follow the cells and the tiles); the axes stay token
        positions and the readout reads the exact cell from the head's entry of *sources*.

        *masked* is [Tq, Tk] (shared by all heads) or [H, Tq, Tk]; masked, NaN and ±inf cells
        are hatched grey. Levels: *levels* if given; else 0..1 when every valid value lies in
        [0, 1] (attention weights); else as :func:`attnlab.ui.plots.heatmap.compute_levels`.
        """
        ready = prepare_heads(weights, row_labels, col_labels, masked, levels, symmetric, cells)
        self._sources = None if sources is None else list(sources)
        self._last_heads = (weights, row_labels, col_labels, masked, title, levels, symmetric, cells, steps, sources)
        n_heads = ready.raw.shape[0]
        shape = self._arrangement(n_heads, ready.cells)
        if n_heads != self._n_heads or shape != self._arranged:
            self._build(n_heads, shape)
        self._show_images(ready, steps)
        self._show_cells(ready)
        self._set_title(title)
        if self._stack.currentWidget() is not self._glw:
            self._stack.setCurrentWidget(self._glw)
            self._readout.setText(self.HINT)
        if self._selected is not None and self._selected >= n_heads:
            self.set_selected(None)
        self._keep_floor()

    def _show_images(self, ready: Prepared, steps: tuple[int, int]) -> None:
        """Every head's image at the shared levels, each pixel a tile of `steps` cells; mask backgrounds where
        a head has bad cells."""
        self._raw, self._mask, self._bad = ready.raw, ready.mask, ready.bad
        self._levels = ready.levels
        self._apply_colormap()
        self._show_levels(self._images, ready.display, self._bar, *ready.levels)
        for img in self._images:  # each image pixel covers one tile of cells (1 × 1 for an ordinary map)
            if (img.transform().m11(), img.transform().m22()) != (steps[1], steps[0]):
                img.setTransform(QtGui.QTransform.fromScale(steps[1], steps[0]))
        bad = ready.bad
        for h, bg in enumerate(self._mask_bgs):
            show = bad is not None and bool(bad[h].any())
            if show != bg.isVisible():
                bg.setVisible(show)

    def _show_cells(self, ready: Prepared) -> None:
        """The views' ranges and the axes' labels, when the cells or the labels changed."""
        cells_changed = ready.cells != self._cells
        if cells_changed:
            self._cells = tq, tk = ready.cells
            for vb, bg in zip(self._views, self._mask_bgs, strict=True):
                bg.set_cells(tq, tk)
                vb.setRange(xRange=(-0.5, tk - 0.5), yRange=(-0.5, tq - 0.5), padding=0.0)
        if cells_changed or ready.row_labels != self._row_labels or ready.col_labels != self._col_labels:
            self._row_labels, self._col_labels = ready.row_labels, ready.col_labels
            self._install_axis_labels()

    def set_loading(self, heads: int) -> None:
        """Say in the readout that `heads` heads of a long input are still being read (0: done)."""
        self._loading = heads
        self._readout.setText(f"Reading {heads} more head(s) of this long input …" if heads else self.HINT)

    def arrangement(self) -> tuple[int, int]:
        """(rows, columns) of the grid shown."""
        return self._arranged

    def row_floor(self) -> float:
        """The least pixels per matrix row each head keeps now (0 outside presentation mode)."""
        return zoom.row_floor(self._row_floor)

    def set_selected(self, head: int | None) -> None:
        """Highlight *head* (None or -1: no highlight)."""
        if head is not None and not (0 <= head < self._n_heads):
            head = None
        if head == self._selected:
            return
        previous, self._selected = self._selected, head
        for h in (previous, head):
            if h is not None and h < self._n_heads:
                self._style_head(h)

    def selected(self) -> int | None:
        return self._selected

    def head_count(self) -> int:
        return self._n_heads

    def image_items(self) -> list[pg.ImageItem]:
        return list(self._images)

    def view_boxes(self) -> list[pg.ViewBox]:
        return list(self._views)

    def colorbar(self) -> pg.ColorBarItem | None:
        return self._bar

    def graphics_view(self) -> pg.GraphicsLayoutWidget:
        return self._glw

    def describe_cell(self, head: int, r: int, c: int) -> str:
        """'head h: row label → col label  [r, c] = value' ('' when out of range)."""
        raw = self._raw
        if raw is None or self._cells is None:
            return ""
        if not (0 <= head < raw.shape[0] and 0 <= r < self._cells[0] and 0 <= c < self._cells[1]):
            return ""
        if self._sources is not None:  # a long map: the exact cell, read from the head's entry
            value, blocked = self._sources[head].value(r, c)
            return f"{words.head_words(head)}: {self._cell_text(value, blocked, r, c)}"
        explicitly = self._mask is not None and bool(self._mask[head, r, c])
        return f"{words.head_words(head)}: {self._cell_text(float(raw[head, r, c]), explicitly, r, c)}"

    def head_at_scene_pos(self, pos: QtCore.QPointF) -> int | None:
        """Head whose plot or title is under scene position *pos*."""
        for h, (vb, lab) in enumerate(zip(self._views, self._head_titles, strict=True)):
            if vb.sceneBoundingRect().contains(pos) or lab.sceneBoundingRect().contains(pos):
                return h
        return None

    def cell_at_scene_pos(self, pos: QtCore.QPointF) -> tuple[int, int, int] | None:
        """(head, row, col) under scene position *pos*, or None."""
        if self._raw is None or self._cells is None:
            return None
        for h, vb in enumerate(self._views):
            if vb.sceneBoundingRect().contains(pos):
                cell = self._cell_in(vb, pos, *self._cells)
                return None if cell is None else (h, *cell)
        return None

    def scene_pos_of_head(self, head: int) -> QtCore.QPointF:
        """Scene position of the centre of *head*'s plot."""
        return self._views[head].sceneBoundingRect().center()

    # ------------------------------------------------------------------ internals
    # what one grid is made of: kept per (H, rows, columns) and put back when that grid is shown again
    _GRID_STATE = (
        "_glw", "_views", "_images", "_mask_bgs", "_head_titles", "_left_axes", "_bottom_axes", "_bar",
        "_applied_cmap", "_cells", "_row_labels", "_col_labels", "_n_heads", "_styled", "_arranged",
    )  # fmt: skip

    def _new_grid_scene(self) -> pg.GraphicsLayoutWidget:
        glw = self._new_scene()
        glw.ci.setSpacing(4)
        return glw

    def _colorbars(self) -> list[pg.ColorBarItem]:
        return [] if self._bar is None else [self._bar]

    def _build(self, n_heads: int, shape: tuple[int, int]) -> None:
        """Show the grid for *n_heads* laid out `shape`: the kept one when seen before, else build it."""
        if self._views:  # keep the grid shown now as it is (an empty one is reused below)
            rows, cols = self._arranged
            self._grids[(self._n_heads, rows, cols)] = {k: getattr(self, k) for k in self._GRID_STATE}
            # a hidden page's floor would still be the stack's (QStackedLayout's least size is its largest page's)
            self._glw.setMinimumHeight(LEAST_SCENE_PX)
            self._glw.setMaximumHeight(NO_MOST)
        kept = self._grids.get((n_heads, shape[0], shape[1]))
        if kept is not None:
            self._restore_grid(kept, n_heads)
            return
        self._glw = self._new_grid_scene() if self._views else self._glw
        self._views, self._images, self._mask_bgs, self._head_titles = [], [], [], []
        self._left_axes, self._bottom_axes = [], []
        self._bar = None
        self._applied_cmap = None
        self._cells = None
        self._row_labels = self._col_labels = None
        self._styled = None
        self._n_heads = n_heads
        self._arranged = shape
        self.rebuild_count += 1
        if n_heads == 0:
            return
        nrows, ncols = shape
        heads = parts.add_heads(self._glw.ci, n_heads, ncols, self._new_image)
        self._views, self._images, self._mask_bgs, self._head_titles = (
            heads.views, heads.images, heads.mask_bgs, heads.titles
        )  # fmt: skip
        self._left_axes, self._bottom_axes = parts.add_axes(self._glw.ci, self._views, n_heads, nrows, ncols)
        self._add_colorbar(nrows, ncols)
        first = self._views[0]
        first.sigResized.connect(
            lambda *_: self._refresh_axis_modes() if self._views and self._views[0] is first else None
        )
        for h in range(n_heads):
            self._style_head(h)
        self._grids[(n_heads, shape[0], shape[1])] = {k: getattr(self, k) for k in self._GRID_STATE}

    # ---- the arrangement and the floor ----------------------------------------------------------------------
    def _per_head(self) -> tuple[float, float, float, float]:
        """What is not cells: (fixed width, fixed height, width per column, height per row) in pixels, from
        the grid shown when there is one, else from the tick font."""
        line = QtGui.QFontMetrics(tick_font()).height()
        guess = Around.guessed(line)
        return Around(
            left=self._left_axes[0].width() if self._left_axes else guess.left,
            bar=self._bar.width() if self._bar is not None else guess.bar,
            bottom=self._bottom_axes[0].height() if self._bottom_axes else guess.bottom,
            title=self._head_titles[0].height() if self._head_titles else guess.title,
            line=line,
        ).per_head()

    def _arrangement(self, n_heads: int, cells: tuple[int, int]) -> tuple[int, int]:
        """The arrangement for `n_heads` of `cells` in the room the scene has (head_grid_layout.arrangement)."""
        room = parts.room(self, self._glw) if self._glw.isVisible() else None
        per_head = self._per_head() if room is not None else (0.0, 0.0, 0.0, 0.0)
        return arrangement(n_heads, cells, room, per_head, self._arranged, self._n_heads)

    def _keep_floor(self) -> None:
        """Presenting, the scene is tall enough for zoom.row_floor(row floor) pixels per row in every head, and
        fills the room up to zoom.row_ceiling; when that would push a row of heads below the stage area, the
        rows shrink to fit it, down to zoom.row_least(GRID_LEAST_PX) (head_grid_layout.scene_heights)."""
        floor = zoom.row_floor(self._row_floor)
        rows, around = 0, 0.0
        if floor > 0 and self._cells is not None and self._views and self._sources is None:  # a long map: no floor
            nrows = self._arranged[0]
            rows = nrows * self._cells[0]
            view_h = self._views[0].height()
            if view_h > 1:
                total = max(self._glw.height(), math.ceil(self._glw.ci.geometry().height()))  # when it overflows
                around = total - nrows * view_h
            else:
                _fixed_w, fixed_h, _col_w, row_h = self._per_head()
                around = fixed_h + nrows * row_h
        room = parts.room_below(self, self._glw) if rows else None
        least, most = scene_heights(floor, zoom.row_least(zoom.GRID_LEAST_PX), rows, around, room)
        if least != self._glw.minimumHeight():
            self._glw.setMinimumHeight(least)
        if most != self._glw.maximumHeight():
            self._glw.setMaximumHeight(most)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._last_heads is not None and not self._rearranging:
            self._rearranging = True
            QtCore.QTimer.singleShot(0, self, self._rearrange)

    def _rearrange(self) -> None:
        """After a resize: lay the heads out again when another arrangement now fits better."""
        self._rearranging = False
        if self._last_heads is None or self._cells is None or self._raw is None:
            return
        if self._arrangement(self._n_heads, self._cells) != self._arranged:
            weights, rows, cols, masked, title, levels, symmetric, cells, steps, sources = self._last_heads
            self.set_heads(
                weights, rows, cols, masked, title, levels=levels, symmetric=symmetric, cells=cells, steps=steps,
                sources=sources,
            )  # fmt: skip
        else:
            self._keep_floor()

    def _restore_grid(self, kept: dict[str, Any], n_heads: int) -> None:
        for k, v in kept.items():
            setattr(self, k, v)
        if self._stack.currentWidget() is not self._message:
            self._stack.setCurrentWidget(self._glw)
        for h in {h for h in (self._styled, self._selected) if h is not None}:
            if h < n_heads:
                self._style_head(h)

    def _add_colorbar(self, nrows: int, ncols: int) -> None:
        """One colour bar on the right that drives every head's image (one shared scale)."""
        self._bar = self._new_colorbar(16)
        self._bar.setImageItem(self._images)
        self._glw.ci.addItem(self._bar, row=1, col=ncols + 1, rowspan=2 * nrows - 1)
        self._glw.ci.layout.setColumnStretchFactor(ncols + 1, 0)

    def _style_head(self, h: int) -> None:
        sel = h == self._selected
        if sel:
            self._styled = h
        elif self._styled == h:
            self._styled = None
        parts.style_head(self._views[h], self._head_titles[h], h, sel)

    def _install_axis_labels(self) -> None:
        if self._cells is not None:
            parts.label_axes(self._left_axes, self._bottom_axes, self._row_labels, self._col_labels, self._cells)
            self._refresh_axis_modes()

    def _refresh_axis_modes(self, *_: object) -> None:
        if not self._views or not self._left_axes or not self._bottom_axes:
            return
        w, h = self._views[0].width(), self._views[0].height()
        if w > 1 and h > 1:
            small = too_small_for_ticks(self._glw.width(), self._glw.height(), self._arranged)
            parts.set_axis_modes(self._left_axes, self._bottom_axes, (w, h), small)

    def _on_mouse_moved(self, pos: QtCore.QPointF) -> None:
        if self._raw is None:
            return
        hit = self.cell_at_scene_pos(pos)
        if hit is None and self._loading:
            self.set_loading(self._loading)
            return
        if hit is not None:
            if self._sources is None or self._hovered[0] != (self._sources, hit):  # a long map: read once a cell
                self._hovered = ((self._sources, hit), self.describe_cell(*hit))
            self._readout.setText(self._hovered[1])
        else:
            self._readout.setText(self.HINT)

    def _handle_click(self, scene_pos: QtCore.QPointF, button: Qt.MouseButton) -> bool:
        if button not in (Qt.MouseButton.LeftButton, Qt.MouseButton.RightButton) or self._raw is None:
            return False
        h = self.head_at_scene_pos(scene_pos)
        if h is None:
            return False
        if button == Qt.MouseButton.RightButton:
            self.headMenuRequested.emit(h, self._glw.mapToGlobal(self._glw.mapFromScene(scene_pos)))
            return True
        self.headClicked.emit(h)
        return True
