"""ValueLabels: text labels at points of a view drawn by one graphics item: the output bars' value labels
("42.0%"), the token names beside the attention lines.

Ten pyqtgraph TextItems re-lay out their text and update their transforms whenever the view changes, and each
is a separate item to paint: a few ms per toggle. This item keeps (x, y, text, inside) per label, draws them in
one paint in pixel space (the text never scales with the view) and tells the clip check where each one went.
A label sits just right of the point (x, y) in the view, vertically centred on it; an "inside" label ends at the
point instead and is drawn in `inside_color` (white, on its bar, by default).
"""

from __future__ import annotations

from typing import NamedTuple

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnlab.ui.window.errors import guarded_paint

INSIDE_COLOR = "#ffffff"


class ValueLabel(NamedTuple):
    x: float  # view coordinates of the point the label is anchored to
    y: float
    text: str
    inside: bool  # True: the label ends at the point (drawn on the bar), else it starts there


class ValueLabels(pg.GraphicsObject):
    """Text labels at points of a ViewBox, painted together; `set_labels` repaints only on a change."""

    def __init__(self, font: QtGui.QFont, color: str, inside_color: str = INSIDE_COLOR):
        super().__init__()
        self._font = QtGui.QFont(font)
        self._metrics = QtGui.QFontMetricsF(self._font)
        self._colors = {False: QtGui.QColor(color), True: QtGui.QColor(inside_color)}
        self._labels: tuple[ValueLabel, ...] = ()

    def set_labels(self, labels: list[ValueLabel]) -> None:
        labels_now = tuple(labels)
        if labels_now != self._labels:
            self._labels = labels_now
            self.update()

    def labels(self) -> list[ValueLabel]:
        return list(self._labels)

    def text_rects(self) -> list[tuple[str, QtCore.QRectF]]:
        """(text, scene rect of its glyphs) per label, as drawn."""
        transform = self.sceneTransform()
        return [(label.text.strip(), rect) for label, rect in self._rects(transform, tight=True)]

    def _rects(self, transform: QtGui.QTransform, tight: bool = False) -> list[tuple[ValueLabel, QtCore.QRectF]]:
        """Each label's box in the coordinates `transform` maps the view into (pixels)."""
        out = []
        for label in self._labels:
            point = transform.map(QtCore.QPointF(label.x, label.y))
            box = self._metrics.tightBoundingRect(label.text) if tight else None
            width = self._metrics.horizontalAdvance(label.text)
            height = self._metrics.height()
            left = point.x() - width if label.inside else point.x()
            rect = QtCore.QRectF(left, point.y() - height / 2, width, height)
            if box is not None:  # the glyphs only, not the spaces around them
                baseline = rect.top() + self._metrics.ascent()
                rect = QtCore.QRectF(left + box.left(), baseline + box.top(), box.width(), box.height())
            out.append((label, rect))
        return out

    def boundingRect(self) -> QtCore.QRectF:
        view = self.getViewBox()
        return QtCore.QRectF(view.viewRect()) if view is not None else QtCore.QRectF()

    def viewRangeChanged(self) -> None:
        self.prepareGeometryChange()  # the bounding rect is the visible range

    @guarded_paint
    def paint(self, painter: QtGui.QPainter, *_args: object) -> None:
        if not self._labels:
            return
        rects = self._rects(painter.transform())
        painter.save()
        painter.resetTransform()  # pixel space: the text keeps its size whatever the view's scale
        painter.setFont(self._font)
        flags = int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)
        for label, rect in rects:
            painter.setPen(self._colors[label.inside])
            painter.drawText(rect, flags, label.text)
        painter.restore()
