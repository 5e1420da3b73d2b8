"""MatrixView: what LabeledHeatmap and HeadGrid share.

A title above, a stack that shows either the pyqtgraph scene(s) or a centred message, and a one-line readout
below; the colour map (a sequential one, or a signed one while the levels straddle 0), the levels, the value
format, the cell labels and the readout text of a cell; the images, colour bars and mask backgrounds the
views are made of; and the mouse plumbing (hover, click, leave). Subclasses lay out their scene and say what
is under the mouse (`_on_mouse_moved`, `_handle_click`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.labels import cell_readout
from attnlab.ui.plots.axes import (
    MaskBackground,
    cache_axis,
    keep_ticks_apart,
    tick_font,
    title_font,
)
from attnlab.ui.plots.colorbar_ticks import lean_vertical_ticks
from attnlab.ui.plots.colormaps import DEFAULT_DIVERGING, DEFAULT_SEQUENTIAL, get_colormap
from attnlab.ui.plots.matrix_data import ValueFormat, describe_value, printable_label
from attnlab.ui.plots.raster import MatrixImage, rect_updates

if TYPE_CHECKING:
    from pyqtgraph.GraphicsScene.mouseEvents import MouseClickEvent

COLORBAR_WIDEST_TICK = "−0.0000"


def set_image(image: pg.ImageItem, page: np.ndarray, lo: float, hi: float) -> None:
    """Show `page` [rows, cols] at levels (lo, hi) in `image`, unless it already shows exactly that: setImage
    drops the rendered picture, so an unchanged map (a toggle that does not reach this step) would be coloured
    and drawn again for nothing."""
    shown = getattr(image, "_attnlab_shown", None)
    if shown is not None and shown[1] == (lo, hi) and shown[0].shape == page.shape:
        if np.array_equal(shown[0], page, equal_nan=True):
            return
    image.setImage(page, autoLevels=False, levels=(lo, hi))
    image._attnlab_shown = (page, (lo, hi))


class MatrixView(QtWidgets.QWidget):
    """The shared state and widgets of a matrix view (see the module docstring)."""

    HINT = ""
    MESSAGE_FONT_GROWTH = 0.0  # points added to the tick font for the centred message

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

        self._raw: np.ndarray | None = None  # the values, float32 ([rows, cols] or [H, rows, cols])
        self._mask: np.ndarray | None = None  # the caller's mask, broadcast to raw's shape
        self._bad: np.ndarray | None = None  # cells drawn as masked (mask, NaN, ±inf), or None
        self._levels: tuple[float, float] | None = None
        self._row_labels: list[str] | None = None
        self._col_labels: list[str] | None = None
        self._title = ""
        # what the rows, columns and values are, for the readout ("query", "key", "weight"; '': row, column, value)
        self.readout_roles: tuple[str, str, str] = ("", "", "")

        self._title_label = QtWidgets.QLabel(self)
        self._title_label.setFont(title_font())
        self._title_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._title_label.setVisible(False)

        self._message = QtWidgets.QLabel(self)
        self._message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._message.setWordWrap(True)
        font = tick_font()
        font.setPointSizeF(font.pointSizeF() + self.MESSAGE_FONT_GROWTH)
        self._message.setFont(font)
        self._stack = QtWidgets.QStackedWidget(self)
        self._stack.addWidget(self._message)

        self._readout = QtWidgets.QLabel("", self)
        self._readout.setFont(tick_font())
        self._readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._readout.setMinimumHeight(QtGui.QFontMetrics(self._readout.font()).height() + 4)
        self._readout.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addWidget(self._title_label)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._readout)

    # ------------------------------------------------------------------ public API (both views)
    def clear(self, message: str = "") -> None:
        """Hide the data and show *message* centred instead (e.g. 'Not available for this model')."""
        self._raw = self._mask = self._bad = None
        self._message.setText(message)
        self._stack.setCurrentWidget(self._message)
        self._readout.setText("")

    def has_data(self) -> bool:
        return self._raw is not None

    def message(self) -> str:
        """The message shown by :meth:`clear` ('' while data is shown)."""
        return "" if self.has_data() else self._message.text()

    def set_colormap(self, name: str, signed: str | None = None) -> None:
        """Use colour map *name*; with *signed*, that map is used whenever the levels straddle 0.

        Unknown names fall back to viridis (see :func:`attnlab.ui.plots.colormaps.get_colormap`).
        """
        self._cmap_name = name
        self._signed_cmap_name = signed
        self._apply_colormap()

    def colormap_name(self) -> str:
        """Name of the colour map currently applied."""
        return self._applied_cmap or self._cmap_name

    def set_value_format(self, fmt: ValueFormat) -> None:
        """Format of values in the readout: a str.format pattern ('{:.3f}') or a callable."""
        self._value_format = fmt

    def levels(self) -> tuple[float, float] | None:
        return self._levels

    def title(self) -> str:
        return self._title

    def readout_text(self) -> str:
        return self._readout.text()

    def row_label(self, r: int) -> str:
        return printable_label(self._row_labels[r]) if self._row_labels is not None else str(r)

    def col_label(self, c: int) -> str:
        return printable_label(self._col_labels[c]) if self._col_labels is not None else str(c)

    # ------------------------------------------------------------------ for the subclasses
    def _colorbars(self) -> Sequence[pg.ColorBarItem]:
        """The colour bars the colour map is applied to (none before the scene is built)."""
        raise NotImplementedError

    def _apply_colormap(self) -> None:
        bars = self._colorbars()
        if not bars:
            return
        name = self._cmap_name
        if self._signed_cmap_name and self._levels is not None and self._levels[0] < 0.0 < self._levels[1]:
            name = self._signed_cmap_name
        if name != self._applied_cmap:
            self._applied_cmap = name
            for bar in bars:
                bar.setColorMap(get_colormap(name))

    def _show_levels(
        self, images: Sequence[pg.ImageItem], display: np.ndarray, bar: pg.ColorBarItem | None, lo: float, hi: float
    ) -> None:
        """Show `display` at levels (lo, hi): [rows, cols] in one image, or [H, rows, cols], a page per image."""
        if len(images) == 1 and display.ndim == 2:
            set_image(images[0], display, lo, hi)
        else:
            for img, page in zip(images, display, strict=True):  # [H, rows, cols]: one image per head
                set_image(img, page, lo, hi)
        if bar is not None and bar.levels() != (lo, hi):
            bar.setLevels((lo, hi), update_items=False)  # the images' levels are already set

    def _set_title(self, title: str) -> None:
        if title != self._title:
            self._title = title
            self._title_label.setText(title)
            self._title_label.setVisible(bool(title))

    def set_value_role(self, word: str) -> None:
        """What the cells are, in the readout ('weight', 'score'; present/labels.value_word)."""
        self.readout_roles = (*self.readout_roles[:2], word)

    def _cell_text(self, value: float, explicitly_masked: bool, r: int, c: int) -> str:
        """'query ␣sentence (408) · key ␣and (179) · weight 0.31' (present/labels.cell_readout)."""
        rows, cols = self._row_labels, self._col_labels
        return cell_readout(
            (r, None if rows is None else rows[r]),
            (c, None if cols is None else cols[c]),
            describe_value(value, explicitly_masked, self._value_format),
            self.readout_roles,
        )

    def _new_scene(self) -> pg.GraphicsLayoutWidget:
        """A pyqtgraph scene placed in the stack before the message, its mouse wired to this view."""
        scene_widget = rect_updates(pg.GraphicsLayoutWidget(self))
        scene_widget.setMinimumSize(160, 120)
        # room above and below for half a tick label: the colour bar's end labels (1.0, 0) sit on its ends
        half_line = QtGui.QFontMetrics(tick_font()).height() // 2 + 1
        scene_widget.ci.setContentsMargins(2, half_line, 2, half_line)
        self._stack.insertWidget(self._stack.count() - 1, scene_widget)
        scene = scene_widget.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)
        return scene_widget

    @staticmethod
    def _new_image(view_box: pg.ViewBox) -> tuple[pg.ImageItem, MaskBackground]:
        """An image (cell (r, c) centred on the point (c, r)) over a hidden mask background, in `view_box`."""
        background = MaskBackground()
        background.setVisible(False)
        view_box.addItem(background, ignoreBounds=True)
        image = MatrixImage(axisOrder="row-major")  # coloured for the raster engine's fast path (raster.py)
        image.setPos(-0.5, -0.5)  # pixel (r, c) covers c-0.5..c+0.5, r-0.5..r+0.5
        # Give the item data before a colour bar sets its levels: levels set on an empty ImageItem are deferred
        # and would override the levels of the first real set_data.
        image.setImage(np.zeros((1, 1), np.float32), autoLevels=False, levels=(0.0, 1.0))
        view_box.addItem(image)
        return image, background

    @staticmethod
    def _new_colorbar(width: int, colormap: str | None = None) -> pg.ColorBarItem:
        bar = pg.ColorBarItem(
            values=(0.0, 1.0),
            width=width,
            interactive=False,
            colorMapMenu=False,
            colorMap=get_colormap(colormap) if colormap else None,
        )
        bar.axis.setTickFont(tick_font())
        bar.axis.setWidth(QtGui.QFontMetrics(tick_font()).horizontalAdvance(COLORBAR_WIDEST_TICK) + 12)
        cache_axis(lean_vertical_ticks(keep_ticks_apart(bar.axis)))
        for side in ("left", "top", "bottom"):  # the empty axes that frame the bar: blit them, never replay them
            cache_axis(bar.getAxis(side))
        for side in ("left", "right", "top", "bottom"):
            # no "(x0.001)" scale on the title; and a new range (new levels every toggle) then only redraws the
            # axis, instead of also re-setting its label's HTML and re-measuring it
            bar.getAxis(side).enableAutoSIPrefix(False)
        return bar

    @staticmethod
    def _cell_in(view_box: pg.ViewBox, pos: QtCore.QPointF, rows: int, cols: int) -> tuple[int, int] | None:
        """(row, col) of the cell of `view_box` under scene position `pos`, or None."""
        p = view_box.mapSceneToView(pos)
        r, c = math.floor(p.y() + 0.5), math.floor(p.x() + 0.5)
        return (r, c) if 0 <= r < rows and 0 <= c < cols else None

    def _on_mouse_moved(self, pos: QtCore.QPointF) -> None:
        raise NotImplementedError

    def _on_mouse_clicked(self, ev: MouseClickEvent) -> None:
        self._handle_click(ev.scenePos(), ev.button())

    def _handle_click(self, scene_pos: QtCore.QPointF, button: Qt.MouseButton) -> bool:
        raise NotImplementedError

    def leaveEvent(self, event: QtCore.QEvent) -> None:
        if self._raw is not None:
            self._readout.setText(self.HINT)
        super().leaveEvent(event)
