"""CellTexts: a short text inside heatmap cells (the logit lens's top token, a chosen expert's weight), each kept
inside its cell: cut with '…' to the cell's width, replaced by its short form when even that does not fit, and
left out when the cells are lower than a line of text; and outlined cells (a chosen expert), drawn at any size.
One graphics item paints them all, in pixel space (the text never scales with the view); cells are centred on
integer (column, row) as in the heatmaps."""

from __future__ import annotations

from typing import NamedTuple

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnlab.ui.window.errors import guarded_paint

PAD_PX = 2.0  # room left between a text and its cell's edges
OUTLINE_COLOR = "#ff9f1c"  # the orange of the output stage's top bar (TOP_COLOR): "this one was picked"
OUTLINE_PX = 2.0


class CellText(NamedTuple):
    row: int
    col: int
    text: str
    short: str  # drawn instead when `text` does not fit even cut ("" : nothing)
    light: bool  # True: the light colour (on a dark cell), else the dark one


class CellTexts(pg.GraphicsObject):
    """Texts centred in heatmap cells, each cut to its cell; `set_texts` repaints only on a change."""

    def __init__(self, font: QtGui.QFont, dark: str = "#1a1a1a", light: str = "#ffffff"):
        super().__init__()
        self._font = QtGui.QFont(font)
        self._metrics = QtGui.QFontMetricsF(self._font)
        self._colors = {False: QtGui.QColor(dark), True: QtGui.QColor(light)}
        self._texts: tuple[CellText, ...] = ()
        self._outlines: tuple[tuple[int, int], ...] = ()
        self._pen = QtGui.QPen(QtGui.QColor(OUTLINE_COLOR), OUTLINE_PX)

    def set_texts(self, texts: list[CellText]) -> None:
        now = tuple(texts)
        if now != self._texts:
            self._texts = now
            self.update()

    def texts(self) -> list[CellText]:
        return list(self._texts)

    def set_outlines(self, cells: list[tuple[int, int]]) -> None:
        """(row, column) of every cell to outline."""
        now = tuple(cells)
        if now != self._outlines:
            self._outlines = now
            self.update()

    def outlines(self) -> list[tuple[int, int]]:
        return list(self._outlines)

    def fitted(self, transform: QtGui.QTransform) -> list[tuple[CellText, str, QtCore.QRectF]]:
        """(cell, the text drawn, its cell's pixel rectangle) for every text that fits, under `transform` (view
        -> pixels)."""
        out = []
        for cell in self._texts:
            rect = transform.mapRect(QtCore.QRectF(cell.col - 0.5, cell.row - 0.5, 1.0, 1.0))
            if rect.height() < 0.8 * self._metrics.height():  # as the axes' labels: a little overlap is legible
                continue
            room = rect.width() - 2 * PAD_PX
            shown = self._metrics.elidedText(cell.text, QtCore.Qt.TextElideMode.ElideRight, room)
            if shown in ("", "…") or self._metrics.horizontalAdvance(shown) > room:
                shown = cell.short if self._metrics.horizontalAdvance(cell.short) <= room else ""
            if shown:
                out.append((cell, shown, rect))
        return out

    def boundingRect(self) -> QtCore.QRectF:
        view = self.getViewBox()
        return QtCore.QRectF(view.viewRect()) if view is not None else QtCore.QRectF()

    def viewRangeChanged(self) -> None:
        self.prepareGeometryChange()  # the bounding rect is the visible range

    @guarded_paint
    def paint(self, painter: QtGui.QPainter, *_args: object) -> None:
        if not self._texts and not self._outlines:
            return
        transform = painter.transform()
        drawn = self.fitted(transform)
        painter.save()
        painter.resetTransform()  # pixel space: the text keeps its size whatever the view's scale
        painter.setPen(self._pen)
        painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        inset = OUTLINE_PX / 2
        for r, c in self._outlines:
            rect = transform.mapRect(QtCore.QRectF(c - 0.5, r - 0.5, 1.0, 1.0))
            painter.drawRect(rect.adjusted(inset, inset, -inset, -inset))
        painter.setFont(self._font)
        for cell, text, rect in drawn:
            painter.setPen(self._colors[cell.light])
            painter.drawText(rect, int(QtCore.Qt.AlignmentFlag.AlignCenter), text)
        painter.restore()
