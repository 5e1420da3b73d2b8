"""Level of detail for a long map in a LabeledHeatmap (present/views/long_map.py is the data side).

A map larger than the pixels it has is drawn as an overview sized to those pixels: each image pixel is one tile
(the max of its block of cells), stretched over the tile's cells, so the view's coordinates stay token
positions (cell (q, k) centred on the point (k, q)) at every zoom. The mouse wheel zooms and a drag pans (only
for a long map). Once the visible cells are few enough that every one gets at least MIN_CELL_PX pixels along
each side (and at most DETAIL_SIDE cells), their exact values are fetched (with a margin, so a small pan needs
nothing new) and drawn over the overview, on their own hatched background for the cells the mask blocks.
Hover readouts and clicks always name the exact (query, key) under the mouse; the readout reads that one cell's
exact value from the source.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui
from shiboken6 import isValid

from attnlab.ui.plots.axes import MaskBackground
from attnlab.ui.plots.matrix_data import prepare_matrix
from attnlab.ui.plots.matrix_view import set_image
from attnlab.ui.plots.raster import MatrixImage
from attnlab.ui.plots.tile_loader import TileLoader

if TYPE_CHECKING:
    from attnlab.present.views.long_map import MapPiece, MapSource

MIN_CELL_PX = 0.5  # exact cells are drawn once each gets at least this many pixels (two cells per pixel)
DETAIL_SIDE = 1024  # and never more than this many rows or columns of them at once
MARGIN = 0.25  # the exact window reaches this share of the visible span beyond each side
SETTLE_MS = 30  # a zoom or pan settles this long before the exact window is fetched
MIN_VISIBLE = 4  # the view never shows fewer cells than this along a side
OVERVIEW_MIN_PX = 64  # an overview is never coarser than this many tiles across a side


class LongMapDetail:
    """The long-map state of one heatmap: its source, the overview tiles, the exact window drawn over them."""

    def __init__(self, view_box: pg.ViewBox, colour_bar: pg.ColorBarItem, base_image: pg.ImageItem) -> None:
        self._vb = view_box
        self._bar = colour_bar
        self.source: MapSource | None = None
        self.overview: MapPiece | None = None
        self.window: MapPiece | None = None  # the exact cells drawn now (None: the overview alone)
        self.background = MaskBackground()
        self.background.setZValue(1)
        self.background.setVisible(False)
        self.image = MatrixImage(axisOrder="row-major")
        self.image.setZValue(2)
        self.image.setImage(np.zeros((1, 1), np.float32), autoLevels=False, levels=(0.0, 1.0))
        self.image.setVisible(False)
        view_box.addItem(self.background, ignoreBounds=True)
        view_box.addItem(self.image, ignoreBounds=True)
        colour_bar.setImageItem([base_image, self.image])  # one colour map for the overview and the window
        self._timer = QtCore.QTimer()
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(self.refresh)
        self.levels: tuple[float, float] = (0.0, 1.0)
        self.loader = TileLoader()  # a map not read before: its one pass runs off the GUI thread
        self.fetches = 0  # exact windows read (tests)

    # ---- the overview ------------------------------------------------------------------------------------
    def overview_for(self, source: MapSource) -> MapPiece:
        """The overview of `source` sized to the view's pixels (at least OVERVIEW_MIN_PX tiles a side); blank
        (NaN tiles, the blocked ones hatched) until its map has been read once (`read_later`)."""
        rows = max(OVERVIEW_MIN_PX, math.ceil(self._vb.height()) if self._vb.height() > 1 else 512)
        cols = max(OVERVIEW_MIN_PX, math.ceil(self._vb.width()) if self._vb.width() > 1 else 512)
        return source.overview(rows, cols) if self.has_read(source) else source.placeholder(rows, cols)

    @staticmethod
    def has_read(source: MapSource) -> bool:
        return source.allowed or source.ready()

    def read_later(self, source: MapSource) -> None:
        """Read `source`'s map once, off the GUI thread (one pass over it; `loader.ready` says when)."""
        self.loader.start([functools.partial(source.overview, 1, 1)])

    def place_overview(self, image: pg.ImageItem, piece: MapPiece) -> None:
        """Stretch the overview image so that each tile covers its cells (position -0.5 stays the item's)."""
        image.setTransform(QtGui.QTransform.fromScale(piece.col_step, piece.row_step))

    def start(self, source: MapSource, piece: MapPiece, levels: tuple[float, float]) -> None:
        """Show `source` from now on: the whole map in view, zoom and pan on, no exact window yet."""
        new_shape = self.source is None or self.source.shape != source.shape
        self.source, self.overview, self.levels = source, piece, levels
        self.hide_window()
        tq, tk = source.shape
        vb = self._vb
        vb.setMouseEnabled(x=True, y=True)
        vb.setLimits(xMin=-0.5, xMax=tk - 0.5, yMin=-0.5, yMax=tq - 0.5, minXRange=MIN_VISIBLE, minYRange=MIN_VISIBLE)
        if new_shape:
            vb.setRange(xRange=(-0.5, tk - 0.5), yRange=(-0.5, tq - 0.5), padding=0.0)
        self.schedule()

    def stop(self, image: pg.ImageItem) -> None:
        """Back to an ordinary (small) map: no zoom, no limits, one cell per image pixel."""
        self.source = self.overview = None
        self.loader.cancel()
        self.hide_window()
        self._timer.stop()
        vb = self._vb
        vb.setMouseEnabled(x=False, y=False)
        vb.setLimits(xMin=None, xMax=None, yMin=None, yMax=None, minXRange=None, minYRange=None)
        image.setTransform(QtGui.QTransform())

    # ---- the exact window --------------------------------------------------------------------------------
    def schedule(self) -> None:
        if self.source is not None:
            self._timer.start()

    def visible(self) -> tuple[int, int, int, int]:
        """(r0, r1, c0, c1): the cells in view, clipped to the map."""
        assert self.source is not None
        tq, tk = self.source.shape
        (x0, x1), (y0, y1) = self._vb.viewRange()
        r0, r1 = max(0, math.floor(y0 + 0.5)), min(tq, math.ceil(y1 + 0.5))
        c0, c1 = max(0, math.floor(x0 + 0.5)), min(tk, math.ceil(x1 + 0.5))
        return r0, r1, c0, c1

    def wants_cells(self) -> bool:
        """Whether the visible cells are few enough to draw exactly."""
        r0, r1, c0, c1 = self.visible()
        w, h = max(self._vb.width(), 1.0), max(self._vb.height(), 1.0)
        rows, cols = r1 - r0, c1 - c0
        return (
            rows <= DETAIL_SIDE
            and cols <= DETAIL_SIDE
            and h / max(rows, 1) >= MIN_CELL_PX
            and w / max(cols, 1) >= MIN_CELL_PX
        )

    def refresh(self) -> None:
        """Draw the exact cells in view (fetching them unless the drawn window covers the view), or hide them."""
        if self.source is None or not isValid(self._vb):  # the panel was closed before its settle timer fired
            return
        if not self.wants_cells():
            self.hide_window()
            return
        r0, r1, c0, c1 = self.visible()
        shown = self.window
        if shown is not None and self.image.isVisible():
            sr, sc = shown.values.shape
            if shown.row0 <= r0 and r1 <= shown.row0 + sr and shown.col0 <= c0 and c1 <= shown.col0 + sc:
                return
        mr, mc = math.ceil((r1 - r0) * MARGIN), math.ceil((c1 - c0) * MARGIN)
        self.show_window(self.source.window(r0 - mr, r1 + mr, c0 - mc, c1 + mc))

    def show_window(self, piece: MapPiece) -> None:
        self.fetches += 1
        raw, display, _mask, bad = prepare_matrix(piece.values, piece.masked)
        self.window = piece
        rows, cols = raw.shape
        lo, hi = self.levels
        set_image(self.image, display, lo, hi)
        self.image.setPos(piece.col0 - 0.5, piece.row0 - 0.5)
        self.background.setRect(QtCore.QRectF(piece.col0 - 0.5, piece.row0 - 0.5, cols, rows))
        self.background.setVisible(bad is not None)
        self.image.setVisible(True)

    def hide_window(self) -> None:
        self.window = None
        self.image.setVisible(False)
        self.background.setVisible(False)

    def set_levels(self, lo: float, hi: float) -> None:
        """New colour levels (a map read late): the exact window drawn again at them."""
        if (lo, hi) != self.levels:
            self.levels = (lo, hi)
            if self.window is not None and self.image.isVisible():
                self.show_window(self.window)

    # ---- reading -----------------------------------------------------------------------------------------
    def visible_counts(self) -> tuple[int, int]:
        """(rows, cols) of cells in view: what the tick labels must fit."""
        r0, r1, c0, c1 = self.visible()
        return max(r1 - r0, 1), max(c1 - c0, 1)
