"""The axes of the matrix views: fonts, the per-cell CategoryAxis (labels, rotated labels or sparse indices,
chosen to fit), the hatched background shown through masked cells, and the cached-axis helper."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.ui.plots.colormaps import MASK_FILL, MASK_HATCH
from attnlab.ui.plots.matrix_data import nice_step
from attnlab.ui.plots.raster import opaque_pen, plot_background
from attnlab.ui.window import zoom
from attnlab.ui.window.errors import guarded_paint

TICK_POINT_SIZE = 10
TITLE_POINT_SIZE = 12
# pyqtgraph's draw specs of an axis (AxisItem.generateDrawSpecs): a line as (pen, start, end); a tick label
# as (rect, Qt alignment and text flags, text)
AxisLine = tuple[QtGui.QPen, QtCore.QPointF, QtCore.QPointF]
TickText = tuple[QtCore.QRectF, object, str]


def tick_font() -> QtGui.QFont:
    """Font for tick labels and readouts: the application font, at least 10 pt at the current zoom."""
    font = QtGui.QFont(QtWidgets.QApplication.font())
    if font.pointSizeF() < zoom.points(TICK_POINT_SIZE):
        font.setPointSizeF(zoom.points(TICK_POINT_SIZE))
    return font


def title_font() -> QtGui.QFont:
    font = tick_font()
    font.setPointSizeF(max(zoom.points(TITLE_POINT_SIZE), font.pointSizeF() + 2))
    font.setBold(True)
    return font


def set_axis_title(axis: pg.AxisItem, text: str) -> None:
    """Axis title at the tick font size, in the axis' text colour (empty text hides it)."""
    style = dict(axis.labelStyle)
    style["color"] = axis.textPen().color().name()
    style["font-size"] = f"{tick_font().pointSizeF():g}pt"
    axis.setLabel(text or None, **style)


def name_scale(bar: pg.ColorBarItem, text: str) -> None:
    """The colour bar's title (e.g. "0 – 0.0031 (99.5th pct)": a scale that is not the values' own), set only
    when it changes (a new title re-measures the axis)."""
    if getattr(bar, "_attnlab_scale", "") != text:
        bar._attnlab_scale = text
        set_axis_title(bar.getAxis("left"), text)


def quiet_hidden_axes(plot: pg.PlotItem) -> pg.PlotItem:
    """The hidden top and right axes of a plot follow its view too: with the auto SI prefix on, every range
    change re-sets their (invisible) label's HTML and re-measures it. They show nothing, so turn it off."""
    for side in ("top", "right"):
        axis = plot.getAxis(side)
        if not axis.isVisible():
            axis.enableAutoSIPrefix(False)
    return plot


def cache_axis(axis: pg.AxisItem) -> pg.AxisItem:
    """Keep the axis drawn in a device-pixel cache: repainting its view (a new image, a new bar) blits
    the cached pixels instead of replaying every tick and label. Any change to the axis (range, labels,
    font, size) calls update(), which refreshes the cache.

    The room for its tick text only grows: a toggle whose labels are a little narrower (the next-token
    bars' words, "0.5" after "-0.25") would otherwise shrink the axis, resize the view beside it, and make
    every axis of the plot draw itself again."""
    axis.setCacheMode(QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
    axis.setStyle(autoReduceTextSpace=False)
    return axis


class OpaqueGridAxis(pg.AxisItem):
    """An axis whose grid lines are drawn opaque: pyqtgraph's translucent grid colour, mixed with the plot
    background beforehand (a translucent line across the plot is a fill Qt hands to its thread pool; see
    raster.py). Use it through `grid_axes` and `show_grid_behind`, which keep the grid behind the data, where
    the opaque line looks the same as the translucent one did."""

    paint = guarded_paint(pg.AxisItem.paint)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        """With the grid on, the major and minor tick levels only: pyqtgraph's third level adds some thirty
        faint grid lines across the plot that nobody reads, and measures a label for each of them."""
        levels = super().tickSpacing(minVal, maxVal, size)
        return levels if self.grid is False else levels[:2]

    def generateDrawSpecs(self, p: QtGui.QPainter) -> tuple[AxisLine, list[AxisLine], list[TickText]] | None:
        specs = super().generateDrawSpecs(p)
        if specs is None or self.grid is False:
            return specs
        axis_spec, tick_specs, text_specs = specs
        background = plot_background()
        flat: dict[int, QtGui.QPen] = {}  # one opaque pen per tick level (pyqtgraph shares a pen per level)
        return (
            axis_spec,
            [
                (flat.get(id(pen)) or flat.setdefault(id(pen), opaque_pen(pen, background)), a, b)
                for pen, a, b in tick_specs
            ],
            text_specs,
        )


def grid_axes() -> dict[str, pg.AxisItem]:
    """A plot's left and bottom axes that can draw an opaque grid (pass as `axisItems=`)."""
    return {side: OpaqueGridAxis(side) for side in ("left", "bottom")}


def show_grid_behind(plot: pg.PlotItem, *, x: bool = False, y: bool = False, alpha: float) -> None:
    """Grid lines at `alpha` along x and/or y, drawn behind the plot's data (made with `grid_axes`)."""
    plot.showGrid(x=x, y=y, alpha=alpha)
    behind = plot.getViewBox().zValue() - 1
    for side, on in (("bottom", x), ("left", y)):
        axis = plot.getAxis(side)
        if on and isinstance(axis, OpaqueGridAxis):
            axis.setZValue(behind)


class MaskBackground(QtWidgets.QGraphicsRectItem):
    """Neutral grey rectangle with a cosmetic diagonal hatch, shown through NaN pixels."""

    def __init__(self) -> None:
        super().__init__()
        self.setPen(QtGui.QPen(Qt.PenStyle.NoPen))
        self.setBrush(QtGui.QBrush(QtGui.QColor(*MASK_FILL)))
        self.setZValue(-10)
        self._hatch = QtGui.QBrush(QtGui.QColor(*MASK_HATCH), Qt.BrushStyle.BDiagPattern)
        # a pattern fill is one the raster engine hands to its thread pool (raster.py): paint it once into a
        # pixel cache and blit that while the view keeps its size, e.g. when a toggle brings new numbers
        self.setCacheMode(QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)

    @guarded_paint
    def paint(self, painter: QtGui.QPainter, option: object, widget: object = None) -> None:
        rect = self.rect()
        painter.setPen(Qt.PenStyle.NoPen)
        painter.fillRect(rect, self.brush())
        painter.fillRect(rect, self._hatch)  # pattern brushes are cosmetic: hatch in device pixels

    def set_cells(self, rows: int, cols: int) -> None:
        rect = QtCore.QRectF(-0.5, -0.5, cols, rows)
        if rect != self.rect():
            self.setRect(rect)


class CategoryAxis(pg.AxisItem):
    """Axis with one tick per cell (integer positions 0..n-1).

    Modes: ``labels`` (one elided label per cell, horizontal), ``rotated`` (bottom axis only:
    labels drawn vertically), ``numeric`` (sparse integer indices on a 1-2-5 step that fits),
    ``none`` (no tick text). Labels are handed over with :meth:`set_labels`; the owner should
    call it only when they change. Ticks are generated on demand in :meth:`tickValues` /
    :meth:`tickStrings`, so ``setTicks`` is never needed.
    """

    MODES = ("labels", "rotated", "numeric", "none")

    paint = guarded_paint(pg.AxisItem.paint)

    def __init__(self, orientation: str, **kwargs: object) -> None:
        super().__init__(orientation, **kwargs)
        cache_axis(self)
        self.enableAutoSIPrefix(False)
        self._font = tick_font()
        self._metrics = QtGui.QFontMetrics(self._font)
        self.setTickFont(self._font)
        self.setStyle(tickLength=4, tickTextOffset=3, autoReduceTextSpace=False)
        self._n = 0
        self._labels: list[str] | None = None  # elided, printable
        self._label_px = 0  # widest elided label, pixels
        self.mode = "numeric"
        self.first = 0  # the number of cell 0 in numeric mode (a window of positions starts later: w-chips)

    # -- state
    @property
    def count(self) -> int:
        return self._n

    @property
    def labels(self) -> list[str] | None:
        """The elided labels shown as ticks (None: numeric indices)."""
        return self._labels

    @property
    def label_px(self) -> int:
        return self._label_px

    @property
    def line_px(self) -> int:
        return self._metrics.height()

    def index_px(self) -> int:
        """Width in pixels of the widest index string."""
        return self._metrics.horizontalAdvance(str(max(self.first + self._n - 1, 0))) + 2

    def set_labels(self, labels: Sequence[str] | None, n: int) -> None:
        """Install elided *labels* (or None for numeric ticks) for an axis of *n* cells."""
        self._n = int(n)
        if labels is None:
            self._labels = None
            self._label_px = 0
        else:
            self._labels = list(labels)
            hadv = self._metrics.horizontalAdvance
            self._label_px = max((hadv(s) for s in self._labels), default=0) + 2
        self._update_overflow()
        self.picture = None
        self.update()

    def set_first(self, first: int) -> None:
        """Number the cells from `first` in numeric mode (cell i is position first + i)."""
        if int(first) != self.first:
            self.first = int(first)
            self.picture = None
            self.update()

    def set_mode(self, mode: str) -> bool:
        """Switch the tick mode; returns True when it changed."""
        if mode not in self.MODES:
            raise ValueError(mode)
        if mode == self.mode:
            return False
        self.mode = mode
        self._update_overflow()
        self.picture = None
        self.update()
        return True

    def _update_overflow(self) -> None:
        """Let end labels (index 0, the last token) overflow the axis ends instead of vanishing."""
        if self.orientation not in ("top", "bottom"):
            return
        if self.mode == "rotated":
            self.style["hideOverlappingLabels"] = self._label_px // 2 + 4
        elif self.mode == "numeric":
            self.style["hideOverlappingLabels"] = self.index_px() // 2 + 4
        else:
            self.style["hideOverlappingLabels"] = True

    def text_extent(self, mode: str | None = None) -> int:
        """Pixels needed across the axis (width for left/right, height for top/bottom)."""
        mode = self.mode if mode is None else mode
        tick = max(0, self.style["tickLength"])
        horizontal = self.orientation in ("top", "bottom")
        offset = self.style["tickTextOffset"][1 if horizontal else 0]
        if mode == "none":
            text = 0
        elif horizontal:
            text = self._label_px + 4 if mode == "rotated" else self.line_px
        else:
            text = max(self._label_px, self.index_px()) + 4
        extent = tick + offset + text + 2
        if self.label.isVisible():
            extent += int(self.label.boundingRect().height() * 0.8) + 2
        return extent

    # -- pyqtgraph hooks
    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[int]]]:
        n = self._n
        if n <= 0 or self.mode == "none":
            return []
        lo, hi = (minVal, maxVal) if minVal <= maxVal else (maxVal, minVal)
        first = max(0, math.ceil(lo))
        last = min(n - 1, math.floor(hi))
        if last < first or hi <= lo:
            return []
        if self.mode in ("labels", "rotated") and self._labels is not None:
            return [(1.0, list(range(first, last + 1)))]
        px_per_cell = size / (hi - lo)
        if self.orientation in ("top", "bottom"):
            need: float = self.index_px() + 14
        else:
            need = self.line_px * 1.6
        step = nice_step(need / max(px_per_cell, 1e-9))
        start = math.ceil((self.first + first) / step) * step - self.first  # round numbers of the positions
        return [(float(step), list(range(start, last + 1, step)))]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if self.mode in ("labels", "rotated") and self._labels is not None:
            labels = self._labels
            return [labels[int(v)] if 0 <= int(v) < len(labels) else "" for v in values]
        return [str(self.first + int(v)) for v in values]

    def drawPicture(
        self, p: QtGui.QPainter, axisSpec: AxisLine, tickSpecs: list[AxisLine], textSpecs: list[TickText]
    ) -> None:
        if self.mode != "rotated" or self.orientation not in ("top", "bottom"):
            super().drawPicture(p, axisSpec, tickSpecs, textSpecs)
            return
        super().drawPicture(p, axisSpec, tickSpecs, [])
        p.setFont(self._font)
        p.setPen(self.textPen())
        length = float(self._label_px + 2)
        half = self.line_px / 2.0
        align = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        for rect, _flags, text in textSpecs:
            p.save()
            if self.orientation == "bottom":
                p.translate(rect.center().x(), rect.top())
                p.rotate(-90)
                p.drawText(QtCore.QRectF(-length, -half, length, 2 * half), align, text)
            else:  # top: text ends at the axis line, reading upwards
                p.translate(rect.center().x(), rect.bottom())
                p.rotate(-90)
                p.drawText(
                    QtCore.QRectF(0, -half, length, 2 * half),
                    int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                    text,
                )
            p.restore()


def choose_modes(
    bottom: CategoryAxis,
    left: CategoryAxis,
    view_w: float,
    view_h: float,
    *,
    allow_rotate: bool = True,
    min_numeric_px: float = 0.0,
) -> tuple[str, str]:
    """Tick modes for a bottom/left axis pair given the view size in pixels."""
    cols, rows = max(bottom.count, 1), max(left.count, 1)
    px_x, px_y = view_w / cols, view_h / rows
    if bottom.labels is not None and px_x >= bottom.label_px + 6:
        bmode = "labels"
    elif bottom.labels is not None and allow_rotate and px_x >= bottom.line_px + 1:
        bmode = "rotated"
    else:
        bmode = "numeric" if view_w >= min_numeric_px else "none"
    if left.labels is not None and px_y >= left.line_px * 0.8:
        lmode = "labels"
    else:
        lmode = "numeric" if view_h >= min_numeric_px else "none"
    return bmode, lmode


def keep_ticks_apart(axis: pg.AxisItem, gap_lines: float = 1.4) -> pg.AxisItem:
    """Make a numeric axis skip tick levels whose labels would run into each other: major ticks at least
    `gap_lines` text lines apart (a short colour bar at a large zoom would otherwise stack '0.2' on '0.4')."""
    original = axis.tickSpacing

    def spacing(min_val: float, max_val: float, size: float) -> list[tuple[float, float]]:
        levels = original(min_val, max_val, size)
        span = abs(max_val - min_val)
        if not levels or span == 0 or size <= 0:
            return levels
        vertical = axis.orientation in ("left", "right")
        font_metrics = QtGui.QFontMetrics(axis.style.get("tickFont") or tick_font())
        need = font_metrics.height() * gap_lines if vertical else font_metrics.horizontalAdvance("-0.00") * 1.3
        px_per_unit = size / span
        kept = [(step, offset) for step, offset in levels if step * px_per_unit >= need]
        if kept:
            return kept
        step = _nice_at_least(need / px_per_unit)
        if _ticks_between(step, min_val, max_val) < 3:  # a short ±4.5 bar would read "0" alone: try 3, 4, 6…
            step = _digit_at_least(need / px_per_unit)
        return [(step, 0.0)]

    axis.tickSpacing = spacing
    return axis


def _ticks_between(step: float, lo: float, hi: float) -> int:
    """How many multiples of `step` lie in [lo, hi]."""
    return math.floor(hi / step + 1e-9) - math.ceil(lo / step - 1e-9) + 1


def _digit_at_least(value: float) -> float:
    """The smallest d × 10ⁿ (d = 1 … 9) that is ≥ value."""
    exponent = math.floor(math.log10(value))
    return next(step for d in range(1, 11) if (step := float(f"{d}e{exponent}")) >= value - 1e-12)


def _nice_at_least(value: float) -> float:
    """The smallest 1, 2, 5 × 10ⁿ that is ≥ value."""
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value - 1e-12)
