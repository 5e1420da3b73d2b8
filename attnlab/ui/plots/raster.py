"""Drawing that stays on the GUI thread: opaque colours and ready-to-blit images.

Qt's raster paint engine splits every fill that is translucent, or that reads from an image it must
convert (an 8-bit indexed image, say), into chunks of 64 scan lines once it covers more than about
96 of them, hands the chunks to Qt's own GUI thread pool and waits for them. A single grid line across a
plot, a half-transparent attention line or a heatmap scaled up from 16×128 cells is such a fill. On two
cores with another busy process the pool's threads wait their turn, and the paint waits with them: ten
translucent grid lines took 1.2 ms and 60 thread switches where the same lines drawn opaque took 0.03 ms
(benchmarks/ui_bench.py measures the whole effect). So the panels:

- draw lines with opaque colours, mixed beforehand with the plot background (`opaque_over`), and keep
  the grid behind the data, where an opaque line looks like a translucent one;
- hand the raster engine heatmaps already coloured as 32-bit premultiplied ARGB (`MatrixImage`), the one
  format it scales and blits without converting;
- hand Qt nothing but C-contiguous float32 arrays (`qt_ready`, the one place every image's data passes):
  QImage reads a buffer row by row, and a strided view (the concat of 128 one-wide heads is column-major)
  raised inside pyqtgraph's paint and crashed the app (issue 27);
- repaint a view through one rectangle (`rect_updates`): pyqtgraph asks for the exact union of what
  changed, and under a clip of several rectangles the raster engine cannot blit an item's cached pixels,
  so it fills them through the pool too;
- draw scroll bars flat (resources/style.qss): the Fusion style fills their grooves with a gradient.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.ui.window.errors import guarded_paint

View = TypeVar("View", bound=QtWidgets.QGraphicsView)


def rect_updates(view: View) -> View:
    """Repaint `view` through the one rectangle that bounds everything that changed (see the module docstring)."""
    view.setViewportUpdateMode(QtWidgets.QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
    return view


def plot_background() -> QtGui.QColor:
    """The plot background of the current theme (pyqtgraph's "background" option)."""
    return pg.mkColor(pg.getConfigOption("background"))


def opaque_over(color: QtGui.QColor, background: QtGui.QColor | None = None) -> QtGui.QColor:
    """`color` as it looks drawn over `background` (the plot background by default), with no alpha."""
    back = plot_background() if background is None else background
    a = color.alphaF()
    mixed = QtGui.QColor()
    mixed.setRgbF(
        a * color.redF() + (1.0 - a) * back.redF(),
        a * color.greenF() + (1.0 - a) * back.greenF(),
        a * color.blueF() + (1.0 - a) * back.blueF(),
        1.0,
    )
    return mixed


def opaque_pen(pen: QtGui.QPen, background: QtGui.QColor | None = None) -> QtGui.QPen:
    """A copy of `pen` whose colour is mixed with the background (solid pens only; others are returned)."""
    if pen.color().alpha() == 255 or pen.brush().style() != Qt.BrushStyle.SolidPattern:
        return pen
    flat = QtGui.QPen(pen)
    flat.setColor(opaque_over(pen.color(), background))
    return flat


def premultiplied_lut(lut: np.ndarray) -> np.ndarray:
    """A uint8 colour table [n, 3] or [n, 4] (RGB(A)) as n premultiplied 0xAARRGGBB words, uint32 [n]."""
    rgba = np.asarray(lut, dtype=np.uint32)  # [n, 3 | 4]
    alpha = rgba[:, 3] if rgba.shape[1] == 4 else np.full(rgba.shape[0], 255, np.uint32)  # [n]
    r, g, b = ((rgba[:, i] * alpha + 127) // 255 for i in range(3))  # [n] each, premultiplied
    return (alpha << 24) | (r << 16) | (g << 8) | b


def qt_ready(values: np.ndarray) -> np.ndarray:
    """`values` as Qt and pyqtgraph may read them: C-contiguous, float32 for float data (no copy when already so)."""
    array = np.asarray(values)
    dtype = np.float32 if array.dtype.kind == "f" else None
    return np.ascontiguousarray(array, dtype=dtype)


def colour_indices(values: np.ndarray, levels: tuple[float, float], n_colours: int) -> np.ndarray:
    """The colour-table index of each value, as pyqtgraph's ImageItem picks it: (v - lo) · n / (hi - lo) in
    float32, clipped to 0…n-1 and truncated. NaN gets index 0 (the caller makes it transparent)."""
    lo, hi = float(levels[0]), float(levels[1])
    span = (hi - lo) or 1.0
    work = values.astype(np.float32, order="C", copy=True)  # [rows, cols], row-major whatever `values` is
    work -= lo
    work *= n_colours / span
    np.clip(work, 0, n_colours - 1, out=work)
    np.nan_to_num(work, copy=False, nan=0.0)
    return work.astype(np.intp)  # [rows, cols]


class QtReadyImage(pg.ImageItem):
    """An ImageItem whose data is always `qt_ready` and whose paint never raises: every image attnlab shows is
    one of these."""

    paint = guarded_paint(pg.ImageItem.paint)

    def setImage(self, image: np.ndarray | None = None, autoLevels: bool | None = None, **kargs: object) -> None:
        super().setImage(None if image is None else qt_ready(image), autoLevels, **kargs)


class MatrixImage(QtReadyImage):
    """An ImageItem for 2-D float data with levels and a colour table, coloured straight into 32-bit
    premultiplied ARGB (NaN cells transparent): drawn without a conversion and without the thread
    pool (see the module docstring). Anything else (RGB data, a callable table) goes through pyqtgraph."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._table: tuple[object, np.ndarray] | None = None  # (the lut it was made from, uint32 [n])
        self._pixels: np.ndarray | None = None  # uint32 [rows, cols], the memory self.qimage points into

    def render(self) -> None:
        image, lut, levels = self.image, self.lut, self.levels
        if (
            image is None
            or image.ndim != 2
            or image.size == 0
            or image.dtype.kind != "f"
            or not isinstance(lut, np.ndarray)
            or lut.ndim != 2
            or lut.shape[1] not in (3, 4)
            or levels is None
            or np.ndim(levels) != 1
            or self.axisOrder != "row-major"
            or self.autoDownsample
        ):
            super().render()
            return
        if self._table is None or self._table[0] is not lut:
            self._table = (lut, premultiplied_lut(lut))
        table = self._table[1]
        pixels = table[colour_indices(image, (levels[0], levels[1]), len(table))]  # uint32 [rows, cols], C order
        pixels[np.isnan(image)] = 0  # transparent: the mask background shows through (±inf clip to the ends)
        self._pixels = pixels
        rows, cols = pixels.shape
        self.qimage = QtGui.QImage(pixels.data, cols, rows, 4 * cols, QtGui.QImage.Format.Format_ARGB32_Premultiplied)
        self._renderRequired = False
        self._unrenderable = False
