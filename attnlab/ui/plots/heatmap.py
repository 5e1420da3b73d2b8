"""LabeledHeatmap: the labelled matrix view every attnlab panel is built on.

One pyqtgraph ImageItem (row-major, float32, one pixel per cell, cell (r, c) centred on the
integer point (c, r), row 0 at the top), token strings as tick labels, a colour bar, a hover
readout and a click signal. Masked or non-finite cells are drawn as NaN (transparent) over a
hatched neutral background, so they never look like a colour of the colour map.

Performance notes: no per-cell Python items; axis tick labels are produced on demand by
:class:`CategoryAxis` from a label list that is handed over only when the labels change, so
an update with the same labels touches neither axis.

What it shares with HeadGrid lives in matrix_view.py (the base class), axes.py (axes, fonts, the mask
background) and matrix_data.py (the Qt-free numbers); the names below are re-exported from here for the
panels that import them from this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.present.labels import axis_role
from attnlab.ui.plots.axes import (
    TICK_POINT_SIZE,
    TITLE_POINT_SIZE,
    CategoryAxis,
    MaskBackground,
    cache_axis,
    choose_modes,
    quiet_hidden_axes,
    set_axis_title,
    tick_font,
    title_font,
)
from attnlab.ui.plots.colormaps import DEFAULT_DIVERGING, DEFAULT_SEQUENTIAL
from attnlab.ui.plots.long_heatmap import LongMapHeatmap
from attnlab.ui.plots.long_map_view import LongMapDetail
from attnlab.ui.plots.matrix_data import (
    MAX_LABEL_CHARS,
    ValueFormat,
    check_labels,
    compute_levels,
    describe_value,
    elide_label,
    format_value,
    prepare_matrix,
    printable_label,
)
from attnlab.ui.plots.matrix_view import MatrixView
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.views.long_map import MapSource

__all__ = [
    "MAX_LABEL_CHARS",
    "TICK_POINT_SIZE",
    "TITLE_POINT_SIZE",
    "CategoryAxis",
    "LabeledHeatmap",
    "MaskBackground",
    "ValueFormat",
    "cache_axis",
    "choose_modes",
    "compute_levels",
    "describe_value",
    "elide_label",
    "format_value",
    "prepare_matrix",
    "printable_label",
    "set_axis_title",
    "tick_font",
    "title_font",
]


MIN_SCENE_HEIGHT = 120  # the scene's least height without a floor (MatrixView._new_scene)
QWIDGETSIZE_MAX = 16777215  # Qt's "no maximum"


class LabeledHeatmap(MatrixView, LongMapHeatmap):
    """A matrix shown as a heatmap with token labels, colour bar, hover readout and clicks.

    Signals:
        cellClicked(int row, int col): left click on a cell.
        cellHovered(int row, int col): the cell under the cursor changed ((-1, -1) = none).
    """

    cellClicked = Signal(int, int)
    cellHovered = Signal(int, int)

    HINT = "Hover a cell to read its value."
    MESSAGE_FONT_GROWTH = 1.0

    def __init__(
        self,
        parent: QtWidgets.QWidget | None = None,
        *,
        colormap: str = DEFAULT_SEQUENTIAL,
        signed_colormap: str | None = DEFAULT_DIVERGING,
        value_format: ValueFormat = "{:.4g}",
        row_floor: float = zoom.ROW_PX_MATRIX,
    ) -> None:
        super().__init__(parent, colormap=colormap, signed_colormap=signed_colormap, value_format=value_format)
        self._shape: tuple[int, int] | None = None
        self._row_floor = row_floor  # the least pixels per row presenting, before zoom (zoom.row_floor)
        self._hover: tuple[int, int] = (-1, -1)
        self._lod: LongMapDetail | None = None  # a long map's level of detail (long_map_view.py), made when needed
        self._source: MapSource | None = None  # the long map shown now (None: an ordinary matrix)
        self._source_levels: tuple[tuple[float, float] | None, bool | None] = (None, None)  # set_source's
        self._described: tuple[object, str] = (None, "")  # (source, row, col) -> the readout of that cell
        self._readout.setText(self.HINT)

        self._view = self._new_scene()
        self._left = CategoryAxis("left")
        self._bottom = CategoryAxis("bottom")
        self._plot = pg.PlotItem(axisItems={"left": self._left, "bottom": self._bottom})
        self._plot.hideButtons()
        quiet_hidden_axes(self._plot)
        self._plot.setMenuEnabled(False)
        self._view.addItem(self._plot, 0, 0)
        vb = self._vb = self._plot.getViewBox()
        vb.setMouseEnabled(x=False, y=False)
        vb.setMenuEnabled(False)
        vb.invertY(True)
        vb.setDefaultPadding(0.0)
        vb.disableAutoRange()
        self._image, self._mask_bg = self._new_image(vb)
        self._bar = self._new_colorbar(18, colormap)
        self._bar.setImageItem(self._image, insert_in=self._plot)
        self._applied_cmap = colormap

        self._left.set_labels(None, 0)
        self._bottom.set_labels(None, 0)
        self._set_axis_sizes()
        vb.sigResized.connect(self._refresh_axis_modes)
        # after the layout that the axes' new modes start (a rotated bottom axis is taller) has run
        vb.sigResized.connect(lambda *_: self._floor_later())
        vb.sigRangeChanged.connect(self._range_changed)
        vb.sigResized.connect(self._resized)
        self._stack.setCurrentWidget(self._message)

    # ------------------------------------------------------------------ public API
    def set_data(
        self,
        matrix: np.ndarray,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
        *,
        title: str = "",
        masked: np.ndarray | None = None,
        levels: tuple[float, float] | None = None,
        symmetric: bool | None = None,
    ) -> None:
        """Show *matrix* [rows, cols].

        *masked* (bool, same shape or broadcastable) cells, and NaN / ±inf values, are drawn
        hatched grey. *levels* fixes the colour range; otherwise it is the min/max of the
        valid cells, or ±max|x| when *symmetric* (default: the data has both signs).
        """
        raw, display, mask, bad = prepare_matrix(matrix, masked)
        if raw.ndim != 2:
            raise ValueError(f"matrix must be 2-D, got shape {raw.shape}")
        if self._source is not None and self._lod is not None:  # a long map before: back to one pixel per cell
            self._source = None
            self._lod.stop(self._image)
        rows, cols = raw.shape
        rlabels = check_labels(row_labels, rows, "row_labels")
        clabels = check_labels(col_labels, cols, "col_labels")
        lo, hi = compute_levels(raw, bad, levels, symmetric)

        self._raw, self._mask, self._bad = raw, mask, bad
        self._levels = (lo, hi)
        self._apply_colormap()
        self._show_levels([self._image], display, self._bar, lo, hi)
        if (bad is not None) != self._mask_bg.isVisible():
            self._mask_bg.setVisible(bad is not None)
        self._show_cells(rows, cols, rlabels, clabels)
        self._set_title(title)
        if self._stack.currentWidget() is not self._view:
            self._stack.setCurrentWidget(self._view)
        if self._hover != (-1, -1):
            r, c = self._hover
            if r < rows and c < cols:
                self._readout.setText(self.describe_cell(r, c))

    def clear(self, message: str = "") -> None:
        """Hide the data and show *message* centred instead (e.g. 'Not available for this model')."""
        super().clear(message)
        self._set_hover(-1, -1)

    def set_axis_titles(self, rows: str = "", cols: str = "") -> None:
        """Titles of the row (left) and column (bottom) axes, e.g. 'query' / 'key'."""
        set_axis_title(self._left, rows)
        set_axis_title(self._bottom, cols)
        self.readout_roles = (axis_role(rows), axis_role(cols), self.readout_roles[2])
        self._set_axis_sizes()

    def set_colorbar_label(self, text: str) -> None:
        set_axis_title(self._bar.getAxis("left"), text)

    def shape(self) -> tuple[int, int] | None:
        return None if self._raw is None else self._shape

    def image_item(self) -> pg.ImageItem:
        return self._image

    def plot_item(self) -> pg.PlotItem:
        return self._plot

    def view_box(self) -> pg.ViewBox:
        return self._vb

    def colorbar(self) -> pg.ColorBarItem:
        return self._bar

    def graphics_view(self) -> pg.GraphicsLayoutWidget:
        return self._view

    def is_masked(self, r: int, c: int) -> bool:
        """True when cell (r, c) is drawn as masked (mask flag, NaN or ±inf)."""
        if self._source is not None:
            value, blocked = self._source.value(r, c)
            return blocked or not math.isfinite(value)
        return self._bad is not None and bool(self._bad[r, c])

    def describe_cell(self, r: int, c: int) -> str:
        """Readout text for cell (r, c): 'row label → col label  [r, c] = value' ('' if none). A long map's
        value is read exactly from its source (one cell), never from the overview's tiles."""
        raw = self._raw
        if raw is None or not (0 <= r < self._cell_shape()[0] and 0 <= c < self._cell_shape()[1]):
            return ""
        if self._source is not None:
            key = (self._source, r, c)
            if self._described[0] != key:  # one cell's exact value, read once per cell the mouse enters
                value, blocked = self._source.value(r, c)
                self._described = (key, self._cell_text(value, blocked, r, c))
            return self._described[1]
        explicitly = self._mask is not None and bool(self._mask[r, c])
        return self._cell_text(float(raw[r, c]), explicitly, r, c)

    def cell_at_scene_pos(self, pos: QtCore.QPointF) -> tuple[int, int] | None:
        """(row, col) of the cell under scene position *pos*, or None."""
        if self._raw is None or not self._vb.sceneBoundingRect().contains(pos):
            return None
        return self._cell_in(self._vb, pos, *self._cell_shape())

    def _cell_shape(self) -> tuple[int, int]:
        """(rows, cols) of the map in cells: a long map's whole shape, else the matrix's."""
        if self._source is not None:
            return self._source.shape
        assert self._raw is not None
        return self._raw.shape[0], self._raw.shape[1]

    def scene_pos_of_cell(self, r: int, c: int) -> QtCore.QPointF:
        """Scene position of the centre of cell (r, c) (handy for tests and overlays)."""
        return self._vb.mapViewToScene(QtCore.QPointF(float(c), float(r)))

    # ------------------------------------------------------------------ internals
    def _colorbars(self) -> list[pg.ColorBarItem]:
        return [self._bar]

    def _show_cells(self, rows: int, cols: int, rlabels: list[str] | None, clabels: list[str] | None) -> None:
        """Size the view to rows x cols and hand the axes new labels, touching only what changed."""
        shape_changed = (rows, cols) != self._shape
        labels_changed = False
        if shape_changed or rlabels != self._row_labels:
            self._row_labels = rlabels
            self._left.set_labels(None if rlabels is None else [elide_label(s) for s in rlabels], rows)
            labels_changed = True
        if shape_changed or clabels != self._col_labels:
            self._col_labels = clabels
            self._bottom.set_labels(None if clabels is None else [elide_label(s) for s in clabels], cols)
            labels_changed = True
        if shape_changed:
            self._shape = (rows, cols)
            self._mask_bg.set_cells(rows, cols)
            self._vb.setRange(xRange=(-0.5, cols - 0.5), yRange=(-0.5, rows - 0.5), padding=0.0)
        if labels_changed:
            self._set_axis_sizes()
            self._refresh_axis_modes()
        if shape_changed:
            self._keep_floor()

    def _keep_floor(self, *_: object) -> None:
        """Presenting, the scene is tall enough for zoom.row_floor(row floor) pixels per row and fills the room
        up to zoom.row_ceiling: its least and most heights are the rows' pixels plus what is not the view
        (axes, colour bar ends, margins)."""
        rows = self._shape[0] if self._shape is not None and self._source is None else 0  # a long map: no floor
        floor, ceiling = zoom.row_floor(self._row_floor), zoom.row_ceiling(self._row_floor)
        least, most = MIN_SCENE_HEIGHT, QWIDGETSIZE_MAX
        if floor > 0 and rows:
            view_h = self._vb.height()
            # the scene's layout never shrinks below its least height: when it overflows the view, it is taller
            total = max(self._view.height(), math.ceil(self._view.ci.geometry().height()))
            around = total - view_h if view_h > 1 else self._bottom.height() + 2 * self._left_pad()
            least = max(least, math.ceil(rows * floor + around))
            most = max(least, math.floor(rows * ceiling + around))
        if least != self._view.minimumHeight():
            self._view.setMinimumHeight(least)
        if most != self._view.maximumHeight():
            self._view.setMaximumHeight(most)

    def _left_pad(self) -> float:
        """Above and below the view before the first layout: the scene's margins (half a tick line) and a bit."""
        left, top, right, bottom = self._view.ci.layout.getContentsMargins()
        return (top + bottom) / 2 + 4

    def row_floor(self) -> float:
        """The least pixels per matrix row this map keeps now (0 outside presentation mode)."""
        return zoom.row_floor(self._row_floor)

    def _set_axis_sizes(self) -> None:
        self._left.setWidth(self._left.text_extent("labels"))
        self._bottom.setHeight(self._bottom.text_extent())
        self._floor_later()

    def _floor_later(self) -> None:
        """_keep_floor after the layout the axes' new sizes start has run (a taller bottom axis, a new title)."""
        if zoom.presenting():
            QtCore.QTimer.singleShot(0, self, self._keep_floor)

    def _refresh_axis_modes(self, *_: object) -> None:
        w, h = self._vb.width(), self._vb.height()
        if w <= 1 or h <= 1:
            return
        if self._source is not None and self._lod is not None and self._shape is not None:
            rows, cols = self._lod.visible_counts()  # the labels must fit the cells in view, not the whole map
            w, h = w * self._shape[1] / cols, h * self._shape[0] / rows
        bmode, lmode = choose_modes(self._bottom, self._left, w, h)
        self._left.set_mode(lmode)
        if self._bottom.set_mode(bmode):
            self._bottom.setHeight(self._bottom.text_extent())
            self._floor_later()

    def _set_hover(self, r: int, c: int) -> None:
        if (r, c) != self._hover:
            self._hover = (r, c)
            self.cellHovered.emit(r, c)

    def _on_mouse_moved(self, pos: QtCore.QPointF) -> None:
        if self._raw is None:
            return
        cell = self.cell_at_scene_pos(pos)
        if cell is not None:
            self._set_hover(*cell)
            self._readout.setText(self.describe_cell(*cell))
            self._view.setToolTip("")
            return
        self._set_hover(-1, -1)
        text = self._axis_label_at(pos, self._cell_shape())
        self._readout.setText(text or self.HINT)
        self._view.setToolTip(text)

    def _axis_label_at(self, pos: QtCore.QPointF, shape: tuple[int, ...]) -> str:
        """Full (unelided) label under the cursor when it is over the tick labels of a map of `shape`."""
        rows, cols = shape
        p = self._vb.mapSceneToView(pos)
        if self._left.isVisible() and self._left.sceneBoundingRect().contains(pos):
            r = math.floor(p.y() + 0.5)
            if 0 <= r < rows:
                return f"row {r}: {self.row_label(r)}"
        if self._bottom.isVisible() and self._bottom.sceneBoundingRect().contains(pos):
            c = math.floor(p.x() + 0.5)
            if 0 <= c < cols:
                return f"column {c}: {self.col_label(c)}"
        return ""

    def _handle_click(self, scene_pos: QtCore.QPointF, button: Qt.MouseButton) -> bool:
        """Emit cellClicked for a left click at *scene_pos*; True when a cell was hit."""
        if button != Qt.MouseButton.LeftButton:
            return False
        cell = self.cell_at_scene_pos(scene_pos)
        if cell is None:
            return False
        self.cellClicked.emit(*cell)
        return True

    def leaveEvent(self, event: QtCore.QEvent) -> None:
        self._set_hover(-1, -1)
        super().leaveEvent(event)
