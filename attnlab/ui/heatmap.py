"""LabeledHeatmap: the labelled matrix view every attnlab panel is built on.

One pyqtgraph ImageItem (row-major, float32, one pixel per cell, cell (r, c) centred on the
integer point (c, r), row 0 at the top), token strings as tick labels, a colour bar, a hover
readout and a click signal. Masked or non-finite cells are drawn as NaN (transparent) over a
hatched neutral background, so they never look like a colour of the colour map.

Performance notes: no per-cell Python items; axis tick labels are produced on demand by
:class:`CategoryAxis` from a label list that is handed over only when the labels change, so
an update with the same labels touches neither axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.ui.colormaps import (
    DEFAULT_DIVERGING,
    DEFAULT_SEQUENTIAL,
    MASK_FILL,
    MASK_HATCH,
    get_colormap,
)

__all__ = [
    "CategoryAxis",
    "LabeledHeatmap",
    "cache_axis",
    "compute_levels",
    "elide_label",
    "prepare_matrix",
]

TICK_POINT_SIZE = 10
TITLE_POINT_SIZE = 12
MAX_LABEL_CHARS = 12
ValueFormat = str | Callable[[float], str]


# ----------------------------------------------------------------------------- helpers


def tick_font() -> QtGui.QFont:
    """Font for tick labels and readouts: the application font, at least 10 pt."""
    font = QtGui.QFont(QtWidgets.QApplication.font())
    if font.pointSizeF() < TICK_POINT_SIZE:
        font.setPointSizeF(TICK_POINT_SIZE)
    return font


def title_font() -> QtGui.QFont:
    font = tick_font()
    font.setPointSizeF(max(TITLE_POINT_SIZE, font.pointSizeF() + 2))
    font.setBold(True)
    return font


_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}


def printable_label(label: object) -> str:
    """Token text made visible: control characters escaped, empty / blank tokens shown as ␣."""
    s = str(label)
    if any(ch in s for ch in _CONTROL_ESCAPES):
        s = "".join(_CONTROL_ESCAPES.get(ch, ch) for ch in s)
    if not s.strip():
        s = "␣" * max(1, len(s))
    return s


def elide_label(label: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """Printable label shortened to *max_chars* characters with a trailing '…'."""
    s = printable_label(label)
    if len(s) > max_chars:
        s = s[: max(1, max_chars - 1)] + "…"
    return s


def _nice_step(min_cells: float) -> int:
    """Smallest 1-2-5 integer step that is at least *min_cells*."""
    if min_cells <= 1:
        return 1
    mag = 10 ** math.floor(math.log10(min_cells))
    for mult in (1, 2, 5, 10):
        if mult * mag >= min_cells:
            return int(mult * mag)
    return int(10 * mag)


def prepare_matrix(
    matrix: object, masked: object | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Validate a 2-D (or 3-D) matrix and build its display image.

    Returns ``(raw, display, mask, bad)``: *raw* is a float32 copy of the values, *display*
    the same with masked / non-finite cells set to NaN (it *is* raw when nothing is bad),
    *mask* the boolean mask broadcast to raw's shape (or None) and *bad* the boolean array of
    cells drawn as masked (or None when there are none).
    """
    raw = np.array(matrix, dtype=np.float32, copy=True)
    mask = None
    if masked is not None:
        mask = np.asarray(masked, dtype=bool)
        if mask.shape != raw.shape:
            try:
                mask = np.broadcast_to(mask, raw.shape)
            except ValueError:
                raise ValueError(
                    f"masked has shape {mask.shape}, incompatible with the matrix shape {raw.shape}"
                ) from None
    bad = ~np.isfinite(raw)
    if mask is not None:
        bad |= mask
    if not bad.any():
        return raw, raw, mask, None
    display = raw.copy()
    display[bad] = np.nan
    return raw, display, mask, bad


def compute_levels(
    raw: np.ndarray,
    bad: np.ndarray | None,
    levels: tuple[float, float] | None = None,
    symmetric: bool | None = None,
) -> tuple[float, float]:
    """Colour levels for *raw*, ignoring *bad* cells (masked, NaN, ±inf).

    Explicit *levels* win. Otherwise min/max of the valid cells, or ±max|x| when *symmetric*
    (default: True exactly when the valid values have both signs). Always finite, lo < hi.
    """
    if levels is not None:
        lo, hi = float(levels[0]), float(levels[1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"levels must be finite, got {levels!r}")
        if lo > hi:
            lo, hi = hi, lo
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        return lo, hi
    valid = raw if bad is None else raw[~bad]
    if valid.size == 0:
        return (-1.0, 1.0) if symmetric else (0.0, 1.0)
    mn, mx = float(valid.min()), float(valid.max())
    if symmetric is None:
        symmetric = mn < 0.0 < mx
    if symmetric:
        a = max(abs(mn), abs(mx))
        if a == 0.0:
            a = 1.0
        return -a, a
    if mn == mx:
        d = 0.5 * abs(mn) if mn != 0.0 else 0.5
        return mn - d, mx + d
    return mn, mx


def format_value(value: float, fmt: ValueFormat) -> str:
    if callable(fmt):
        return fmt(value)
    return fmt.format(value)


def describe_value(value: float, is_masked: bool, fmt: ValueFormat) -> str:
    if is_masked:
        return "masked"
    if math.isnan(value):
        return "NaN (masked)"
    if math.isinf(value):
        return ("−inf" if value < 0 else "+inf") + " (masked)"
    return format_value(value, fmt)


def set_axis_title(axis: pg.AxisItem, text: str) -> None:
    """Axis title at the tick font size, in the axis' text colour (empty text hides it)."""
    style = dict(axis.labelStyle)
    style["color"] = axis.textPen().color().name()
    style["font-size"] = f"{tick_font().pointSizeF():g}pt"
    axis.setLabel(text or None, **style)


def cache_axis(axis: pg.AxisItem) -> pg.AxisItem:
    """Keep the axis drawn in a device-pixel cache: repainting its view (a new image, a new bar) blits
    the cached pixels instead of replaying every tick and label. Any change to the axis (range, labels,
    font, size) calls update(), which refreshes the cache."""
    axis.setCacheMode(QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
    return axis


class MaskBackground(QtWidgets.QGraphicsRectItem):
    """Neutral grey rectangle with a cosmetic diagonal hatch, shown through NaN pixels."""

    def __init__(self) -> None:
        super().__init__()
        self.setPen(QtGui.QPen(Qt.PenStyle.NoPen))
        self.setBrush(QtGui.QBrush(QtGui.QColor(*MASK_FILL)))
        self.setZValue(-10)
        self._hatch = QtGui.QBrush(QtGui.QColor(*MASK_HATCH), Qt.BrushStyle.BDiagPattern)

    def paint(self, painter: QtGui.QPainter, option: object, widget: object = None) -> None:
        rect = self.rect()
        painter.setPen(Qt.PenStyle.NoPen)
        painter.fillRect(rect, self.brush())
        painter.fillRect(rect, self._hatch)  # pattern brushes are cosmetic: hatch in device pixels

    def set_cells(self, rows: int, cols: int) -> None:
        rect = QtCore.QRectF(-0.5, -0.5, cols, rows)
        if rect != self.rect():
            self.setRect(rect)


# ------------------------------------------------------------------------ category axis


class CategoryAxis(pg.AxisItem):
    """Axis with one tick per cell (integer positions 0..n-1).

    Modes: ``labels`` (one elided label per cell, horizontal), ``rotated`` (bottom axis only:
    labels drawn vertically), ``numeric`` (sparse integer indices on a 1-2-5 step that fits),
    ``none`` (no tick text). Labels are handed over with :meth:`set_labels`; the owner should
    call it only when they change. Ticks are generated on demand in :meth:`tickValues` /
    :meth:`tickStrings`, so ``setTicks`` is never needed.
    """

    MODES = ("labels", "rotated", "numeric", "none")

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
        return self._metrics.horizontalAdvance(str(max(self._n - 1, 0))) + 2

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
    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:
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
            need = self.index_px() + 14
        else:
            need = self.line_px * 1.6
        step = _nice_step(need / max(px_per_cell, 1e-9))
        start = math.ceil(first / step) * step
        return [(float(step), list(range(start, last + 1, step)))]

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:
        if self.mode in ("labels", "rotated") and self._labels is not None:
            labels = self._labels
            return [labels[int(v)] if 0 <= int(v) < len(labels) else "" for v in values]
        return [str(int(v)) for v in values]

    def drawPicture(self, p: QtGui.QPainter, axisSpec, tickSpecs, textSpecs) -> None:
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
                p.drawText(QtCore.QRectF(0, -half, length, 2 * half),
                           int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)
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


# ----------------------------------------------------------------------- labeled heatmap


class LabeledHeatmap(QtWidgets.QWidget):
    """A matrix shown as a heatmap with token labels, colour bar, hover readout and clicks.

    Signals:
        cellClicked(int row, int col): left click on a cell.
        cellHovered(int row, int col): the cell under the cursor changed ((-1, -1) = none).
    """

    cellClicked = Signal(int, int)
    cellHovered = Signal(int, int)

    HINT = "Hover a cell to read its value."

    def __init__(
        self,
        parent: QtWidgets.QWidget | None = None,
        *,
        colormap: str = DEFAULT_SEQUENTIAL,
        signed_colormap: str | None = DEFAULT_DIVERGING,
        value_format: ValueFormat = "{:.4g}",
    ) -> None:
        super().__init__(parent)
        self._value_format: ValueFormat = value_format
        self._cmap_name = colormap
        self._signed_cmap_name = signed_colormap
        self._applied_cmap: str | None = None

        self._raw: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self._bad: np.ndarray | None = None
        self._shape: tuple[int, int] | None = None
        self._levels: tuple[float, float] | None = None
        self._row_labels: list[str] | None = None
        self._col_labels: list[str] | None = None
        self._title = ""
        self._hover: tuple[int, int] = (-1, -1)

        # -- widgets
        self._title_label = QtWidgets.QLabel(self)
        self._title_label.setFont(title_font())
        self._title_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._title_label.setVisible(False)

        self._view = pg.GraphicsLayoutWidget(self)
        self._view.setMinimumSize(160, 120)
        self._view.ci.setContentsMargins(2, 2, 2, 2)
        self._message = QtWidgets.QLabel(self)
        self._message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._message.setWordWrap(True)
        msg_font = tick_font()
        msg_font.setPointSizeF(msg_font.pointSizeF() + 1)
        self._message.setFont(msg_font)
        self._stack = QtWidgets.QStackedWidget(self)
        self._stack.addWidget(self._view)
        self._stack.addWidget(self._message)

        self._readout = QtWidgets.QLabel(self.HINT, self)
        self._readout.setFont(tick_font())
        self._readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._readout.setMinimumHeight(QtGui.QFontMetrics(self._readout.font()).height() + 4)
        self._readout.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored,
                                    QtWidgets.QSizePolicy.Policy.Fixed)

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addWidget(self._title_label)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._readout)

        # -- scene
        self._left = CategoryAxis("left")
        self._bottom = CategoryAxis("bottom")
        self._plot = pg.PlotItem(axisItems={"left": self._left, "bottom": self._bottom})
        self._plot.hideButtons()
        self._plot.setMenuEnabled(False)
        self._view.addItem(self._plot, 0, 0)
        vb = self._plot.getViewBox()
        self._vb = vb
        vb.setMouseEnabled(x=False, y=False)
        vb.setMenuEnabled(False)
        vb.invertY(True)
        vb.setDefaultPadding(0.0)
        vb.disableAutoRange()

        self._mask_bg = MaskBackground()
        self._mask_bg.setVisible(False)
        vb.addItem(self._mask_bg, ignoreBounds=True)
        self._image = pg.ImageItem(axisOrder="row-major")
        self._image.setPos(-0.5, -0.5)  # pixel (r, c) covers c-0.5..c+0.5, r-0.5..r+0.5
        # Give the item data before the colour bar sets its levels: levels set on an empty
        # ImageItem are deferred and would override the levels of the first real set_data.
        self._image.setImage(np.zeros((1, 1), np.float32), autoLevels=False, levels=(0.0, 1.0))
        vb.addItem(self._image)

        self._bar = pg.ColorBarItem(
            values=(0.0, 1.0), width=18, interactive=False, colorMapMenu=False,
            colorMap=get_colormap(colormap),
        )
        self._bar.axis.setTickFont(tick_font())
        self._bar.axis.setWidth(QtGui.QFontMetrics(tick_font()).horizontalAdvance("−0.0000") + 12)
        cache_axis(self._bar.axis)
        self._bar.setImageItem(self._image, insert_in=self._plot)
        self._applied_cmap = colormap

        self._left.set_labels(None, 0)
        self._bottom.set_labels(None, 0)
        self._set_axis_sizes()

        vb.sigResized.connect(self._refresh_axis_modes)
        scene = self._view.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)
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
        rows, cols = raw.shape
        rlabels = self._check_labels(row_labels, rows, "row_labels")
        clabels = self._check_labels(col_labels, cols, "col_labels")
        lo, hi = compute_levels(raw, bad, levels, symmetric)

        self._raw, self._mask, self._bad = raw, mask, bad
        self._levels = (lo, hi)
        self._apply_colormap()

        self._image.setImage(display, autoLevels=False, levels=(lo, hi))
        if self._bar.levels() != (lo, hi):
            self._bar.setLevels((lo, hi), update_items=False)  # image levels already set
        if (bad is not None) != self._mask_bg.isVisible():
            self._mask_bg.setVisible(bad is not None)

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

        if title != self._title:
            self._title = title
            self._title_label.setText(title)
            self._title_label.setVisible(bool(title))
        if self._stack.currentWidget() is not self._view:
            self._stack.setCurrentWidget(self._view)
        if self._hover != (-1, -1):
            r, c = self._hover
            if r < rows and c < cols:
                self._readout.setText(self.describe_cell(r, c))

    def clear(self, message: str = "") -> None:
        """Hide the data and show *message* centred instead (e.g. 'Not available for this model')."""
        self._raw = self._mask = self._bad = None
        self._message.setText(message)
        self._stack.setCurrentWidget(self._message)
        self._set_hover(-1, -1)
        self._readout.setText("")

    def set_colormap(self, name: str, signed: str | None = None) -> None:
        """Use colour map *name*; with *signed*, that map is used whenever the levels straddle 0.

        Unknown names fall back to viridis (see :func:`attnlab.ui.colormaps.get_colormap`).
        """
        self._cmap_name = name
        self._signed_cmap_name = signed
        self._apply_colormap()

    def colormap_name(self) -> str:
        """Name of the colour map currently applied."""
        return self._applied_cmap or self._cmap_name

    def set_axis_titles(self, rows: str = "", cols: str = "") -> None:
        """Titles of the row (left) and column (bottom) axes, e.g. 'query' / 'key'."""
        set_axis_title(self._left, rows)
        set_axis_title(self._bottom, cols)
        self._set_axis_sizes()

    def set_value_format(self, fmt: ValueFormat) -> None:
        """Format of values in the readout: a str.format pattern ('{:.3f}') or a callable."""
        self._value_format = fmt

    def set_colorbar_label(self, text: str) -> None:
        set_axis_title(self._bar.getAxis("left"), text)

    def levels(self) -> tuple[float, float] | None:
        return self._levels

    def title(self) -> str:
        return self._title

    def has_data(self) -> bool:
        return self._raw is not None

    def message(self) -> str:
        """The message shown by :meth:`clear` ('' while data is shown)."""
        return "" if self.has_data() else self._message.text()

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

    def readout_text(self) -> str:
        return self._readout.text()

    def is_masked(self, r: int, c: int) -> bool:
        """True when cell (r, c) is drawn as masked (mask flag, NaN or ±inf)."""
        return self._bad is not None and bool(self._bad[r, c])

    def row_label(self, r: int) -> str:
        return printable_label(self._row_labels[r]) if self._row_labels is not None else str(r)

    def col_label(self, c: int) -> str:
        return printable_label(self._col_labels[c]) if self._col_labels is not None else str(c)

    def describe_cell(self, r: int, c: int) -> str:
        """Readout text for cell (r, c): 'row label → col label  [r, c] = value' ('' if none)."""
        raw = self._raw
        if raw is None or not (0 <= r < raw.shape[0] and 0 <= c < raw.shape[1]):
            return ""
        explicitly = self._mask is not None and bool(self._mask[r, c])
        value = describe_value(float(raw[r, c]), explicitly, self._value_format)
        where = f"[{r}, {c}] = {value}"
        if self._row_labels is None and self._col_labels is None:
            return where
        return f"{self.row_label(r)} → {self.col_label(c)}  {where}"

    def cell_at_scene_pos(self, pos: QtCore.QPointF) -> tuple[int, int] | None:
        """(row, col) of the cell under scene position *pos*, or None."""
        if self._raw is None or not self._vb.sceneBoundingRect().contains(pos):
            return None
        p = self._vb.mapSceneToView(pos)
        r, c = math.floor(p.y() + 0.5), math.floor(p.x() + 0.5)
        rows, cols = self._raw.shape
        if 0 <= r < rows and 0 <= c < cols:
            return r, c
        return None

    def scene_pos_of_cell(self, r: int, c: int) -> QtCore.QPointF:
        """Scene position of the centre of cell (r, c) (handy for tests and overlays)."""
        return self._vb.mapViewToScene(QtCore.QPointF(float(c), float(r)))

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _check_labels(labels: Sequence[str] | None, n: int, name: str) -> list[str] | None:
        if labels is None:
            return None
        out = [str(s) for s in labels]
        if len(out) != n:
            raise ValueError(f"{name} has {len(out)} entries for {n} matrix {name[:3]}s")
        return out

    def _apply_colormap(self) -> None:
        name = self._cmap_name
        if self._signed_cmap_name and self._levels is not None and self._levels[0] < 0.0 < self._levels[1]:
            name = self._signed_cmap_name
        if name != self._applied_cmap:
            self._applied_cmap = name
            self._bar.setColorMap(get_colormap(name))

    def _set_axis_sizes(self) -> None:
        self._left.setWidth(self._left.text_extent("labels"))
        self._bottom.setHeight(self._bottom.text_extent())

    def _refresh_axis_modes(self, *_: object) -> None:
        w, h = self._vb.width(), self._vb.height()
        if w <= 1 or h <= 1:
            return
        bmode, lmode = choose_modes(self._bottom, self._left, w, h)
        self._left.set_mode(lmode)
        if self._bottom.set_mode(bmode):
            self._bottom.setHeight(self._bottom.text_extent())

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
        text = self._axis_label_at(pos)
        self._readout.setText(text or self.HINT)
        self._view.setToolTip(text)

    def _axis_label_at(self, pos: QtCore.QPointF) -> str:
        """Full (unelided) label under the cursor when it is over the tick labels."""
        rows, cols = self._raw.shape
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

    def _on_mouse_clicked(self, ev: object) -> None:
        self._handle_click(ev.scenePos(), ev.button())

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
        if self._raw is not None:
            self._readout.setText(self.HINT)
        super().leaveEvent(event)
