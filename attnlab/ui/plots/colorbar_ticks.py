"""Lean tick drawing for the colour bars of the matrix views.

A colour bar's levels change with nearly every toggle, and pyqtgraph's AxisItem.generateDrawSpecs then took ~60%
of a heatmap's repaint: it lays out every label string with a QPainter to measure it and reads the item's
rectangle once per label. `lean_vertical_ticks` gives a vertical axis without grid a replacement that makes the
same ticks, pens, strings and text positions (tests/ui/test_raster.py compares them), measured once per string with
the tick font's metrics, and keeps the last few results: a toggle and its reverse (residual off, then on again)
bring back levels the bar has drawn before, and those cost a dictionary lookup.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import pyqtgraph as pg
from PySide6 import QtCore, QtGui
from PySide6.QtCore import Qt

SPECS_KEPT = 16  # results kept per axis

Specs = tuple  # (axis line spec, tick specs, text specs), as AxisItem.generateDrawSpecs returns them


def lean_vertical_ticks(axis: pg.AxisItem) -> pg.AxisItem:
    """Install LeanTicks as `axis`'s generateDrawSpecs (an instance attribute: pyqtgraph's paint calls it)."""
    axis.generateDrawSpecs = LeanTicks(axis)
    return axis


class LeanTicks:
    """generateDrawSpecs for a vertical axis without grid; anything else goes to pyqtgraph's."""

    def __init__(self, axis: pg.AxisItem) -> None:
        self.axis = axis
        self.original = axis.generateDrawSpecs
        self._kept: OrderedDict[tuple, tuple[Specs, float]] = OrderedDict()  # key -> (specs, widest kept text)

    def __call__(self, painter: QtGui.QPainter) -> Specs | None:
        axis = self.axis
        if axis.grid is not False or axis.orientation not in ("left", "right") or axis._tickLevels is not None:
            return self.original(painter)
        font = axis.style["tickFont"] or painter.font()
        painter.setFont(font)
        bounds = axis.mapRectFromParent(axis.geometry())
        right = axis.orientation == "right"
        edge = bounds.left() if right else bounds.right()  # where the ticks start
        inward = 1.0 if right else -1.0
        span = (QtCore.QPointF(edge + inward, bounds.top() - 1.0), QtCore.QPointF(edge + inward, bounds.bottom() + 1.0))
        ends = [axis.mapToDevice(point) for point in span]
        if None in ends:
            return None
        length = math.hypot(ends[1].x() - ends[0].x(), ends[1].y() - ends[0].y())
        lo, hi = axis.range
        if length == 0 or hi == lo:
            return self.original(painter)
        key = self._key(font, bounds, length)
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = self._specs(font, bounds, span, length)
            if len(self._kept) > SPECS_KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        axis._updateMaxTextSize(kept[1])
        return kept[0]

    def _key(self, font: QtGui.QFont, bounds: QtCore.QRectF, length: float) -> tuple:
        """Everything the specs depend on: range, rectangle, font, pens, style."""
        axis, style = self.axis, self.axis.style
        tick_pen = axis.tickPen()
        return (
            tuple(axis.range),
            bounds.getRect(),
            round(length, 6),
            axis.orientation,
            font.key(),
            axis.pen().color().rgba(),
            tick_pen.color().rgba(),
            tick_pen.widthF(),
            style["tickLength"],
            style["tickTextOffset"][0],
            style["tickAlpha"],
            style["showValues"],
            style["maxTextLevel"],
            tuple(map(tuple, style["textFillLimits"])),
            axis.autoSIPrefixScale,
            axis.scale,
        )

    def _specs(
        self, font: QtGui.QFont, bounds: QtCore.QRectF, span: tuple[QtCore.QPointF, QtCore.QPointF], length: float
    ) -> tuple[Specs, float]:
        axis, style = self.axis, self.axis.style
        right = axis.orientation == "right"
        edge = bounds.left() if right else bounds.right()
        lo, hi = axis.range
        levels = axis.tickValues(lo, hi, length)  # [(spacing, values)], major first
        tick_specs, positions = self._ticks(levels, bounds, edge, 1.0 if right else -1.0)
        axis_spec = (axis.pen(), pg.Point(span[0]), pg.Point(span[1]))
        if not style["showValues"]:
            return (axis_spec, tick_specs, []), 0.0
        text_specs, widest = self._texts(levels, positions, font, edge, right, length)
        return (axis_spec, tick_specs, text_specs), widest

    def _ticks(
        self, levels: list, bounds: QtCore.QRectF, edge: float, inward: float
    ) -> tuple[list[tuple], list[list[float | None]]]:
        """Each level's tick lines (pyqtgraph's lengths and alphas) and each value's y (None: off the bar)."""
        axis, style = self.axis, self.axis.style
        lo, hi = axis.range
        y_scale = -bounds.height() / (hi - lo)
        y_offset = lo * y_scale - bounds.height()
        y_min, y_max = sorted((lo * y_scale - y_offset, hi * y_scale - y_offset))
        tick_specs, positions = [], []
        for i, (_spacing, values) in enumerate(levels):
            tick_length = style["tickLength"] / (i * 0.5 + 1.0)
            pen = QtGui.QPen(axis.tickPen())
            alpha = style["tickAlpha"]
            alpha = 255 / (i + 1) if alpha is None else (alpha * 255 if isinstance(alpha, float) else alpha)
            color = QtGui.QColor(pen.color())
            color.setAlpha(max(0, min(255, int(alpha))))
            pen.setColor(color)
            level_positions: list[float | None] = []
            for value in values:
                y = value * y_scale - y_offset
                if y < y_min or y > y_max:
                    level_positions.append(None)
                    continue
                level_positions.append(y)
                tick_specs.append((pen, pg.Point(edge, y), pg.Point(edge + tick_length * inward, y)))
            positions.append(level_positions)
        return tick_specs, positions

    def _texts(
        self, levels: list, positions: list, font: QtGui.QFont, edge: float, right: bool, length: float
    ) -> tuple[list[tuple[QtCore.QRectF, int, str]], float]:
        """The labels pyqtgraph would draw (levels while they fit its fill limits), and the widest one."""
        axis, style = self.axis, self.axis.style
        metrics = QtGui.QFontMetricsF(font)
        line = metrics.height() * 0.8  # pyqtgraph shrinks its measured text height by the same factor
        text_offset = max(0, style["tickLength"]) + style["tickTextOffset"][0]
        flags = (
            (Qt.AlignmentFlag.AlignLeft if right else Qt.AlignmentFlag.AlignRight)
            | Qt.AlignmentFlag.AlignVCenter
            | Qt.TextFlag.TextDontClip
        )
        box = axis.boundingRect()
        text_specs: list[tuple[QtCore.QRectF, int, str]] = []
        heights, widest, last_widest = 0.0, 0.0, 0.0
        for i in range(min(len(levels), style["maxTextLevel"] + 1)):
            spacing, values = levels[i]
            strings = axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
            shown = [(y, text) for y, text in zip(positions[i], strings, strict=False) if y is not None]
            if not shown:
                continue
            widths = [metrics.horizontalAdvance(text) for _y, text in shown]
            heights += line * len(shown)
            widest = max(widest, *widths)
            if i > 0 and any(
                len(text_specs) >= n_texts and heights / length >= limit for n_texts, limit in style["textFillLimits"]
            ):
                break
            last_widest = widest
            for (y, text), width in zip(shown, widths, strict=True):
                x = edge + text_offset if right else edge - text_offset - width
                rect = QtCore.QRectF(x, y - line / 2, width, line)
                if box & rect == rect:
                    text_specs.append((rect, int(flags), text))
        return text_specs, last_widest
