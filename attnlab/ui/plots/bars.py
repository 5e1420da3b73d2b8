"""SolidBars: bars of one colour, for the per-token bar plots (add & norm's mean and variance, vertical) and the
output's next-token bars (horizontal; the top bar is a second SolidBars in its own colour).

pyqtgraph's BarGraphItem recomputes its bounding rectangle, pixel padding included, every time the scene
asks (about twenty times per repaint), and rebuilds its data arrays on every setOpts. Here a change
builds the rectangles and their bounds once, and a paint is one drawRects call with an opaque brush.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui
from PySide6.QtCore import Qt

from attnlab.ui.window.errors import guarded_paint


class SolidBars(pg.GraphicsObject):
    """Bar i spans x[i] ± width/2 across and 0 … heights[i] along the value axis (data coordinates): vertical
    bars by default, or with `horizontal=True` bars along x at rows x[i] (the output's next-token bars)."""

    def __init__(self, color: str, width: float, *, horizontal: bool = False) -> None:
        super().__init__()
        self._brush = QtGui.QBrush(QtGui.QColor(color))
        self._width = width
        self._horizontal = horizontal
        self._rects: list[QtCore.QRectF] = []
        self._bounds = QtCore.QRectF()
        self._x = np.zeros(0)
        self._heights = np.zeros(0)

    def set_bars(self, x: np.ndarray, heights: np.ndarray) -> None:
        """Show one bar per (x, height); non-finite heights draw no bar."""
        half = self._width / 2.0
        pairs = zip(np.asarray(x, float).tolist(), np.asarray(heights, float).tolist(), strict=True)
        if self._horizontal:  # row xi, from 0 to h along x
            rects = [QtCore.QRectF(min(0.0, h), xi - half, abs(h), self._width) for xi, h in pairs if math.isfinite(h)]
        else:
            rects = [QtCore.QRectF(xi - half, min(0.0, h), self._width, abs(h)) for xi, h in pairs if math.isfinite(h)]
        bounds = QtCore.QRectF()
        for rect in rects:
            bounds = bounds.united(rect)
        self.prepareGeometryChange()
        self._rects, self._bounds = rects, bounds
        self._x, self._heights = np.asarray(x, float), np.asarray(heights, float)
        self.informViewBoundsChanged()
        self.update()

    def bars(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, heights) as last set."""
        return self._x, self._heights

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange: object = None) -> tuple[float, float] | None:
        if self._bounds.isNull():
            return None
        if ax == 0:
            return self._bounds.left(), self._bounds.right()
        return self._bounds.top(), self._bounds.bottom()

    @guarded_paint
    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if self._rects:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self._brush)
            painter.drawRects(self._rects)
