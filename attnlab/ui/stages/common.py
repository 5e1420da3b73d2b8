"""Helpers shared by the stage panels: token labels of a site, head clamping, notes, a recording heatmap."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.ui.heatmap import LabeledHeatmap
from attnlab.ui.stages.facts import (  # noqa: F401 (re-exported for the panels)
    SPECIAL_TOKENS,
    array,
    layer_name,
    layer_side,
    missing,
    missing_message,
    residual_is_off,
    scaling_off,
    side_name,
    site_name,
    site_sides,
    sublayer_output,
    tokens,
)

NOTE_POINT_SIZE = 12


def axis_title(side: str, role: str) -> str:
    """'query · decoder token' style axis titles."""
    return f"{role} ({'encoder' if side == 'src' else 'decoder'} tokens)"


def clamp_head(head: int, n_heads: int) -> int:
    return min(max(int(head), 0), max(n_heads - 1, 0))


# ---------------------------------------------------------------------------------------- widgets
def note_font(delta: float = 0.0, bold: bool = False) -> QtGui.QFont:
    font = QtGui.QFont(QtWidgets.QApplication.font())
    font.setPointSizeF(max(font.pointSizeF(), NOTE_POINT_SIZE) + delta)
    font.setBold(bold)
    return font


class Note(QtWidgets.QLabel):
    """A wrapped line of explanatory text under or above a picture; setText only when it changes."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, delta: float = 0.0, bold: bool = False):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setFont(note_font(delta, bold))
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Minimum)

    def show_text(self, text: str) -> None:
        if text != self.text():
            self.setText(text)
        self.setVisible(bool(text))


class MessageStack(QtWidgets.QStackedWidget):
    """Either the panel's content or a centred message (data missing from the trace)."""

    def __init__(self, content: QtWidgets.QWidget, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.content = content
        self.message = QtWidgets.QLabel(self)
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setFont(note_font(1))
        self.addWidget(content)
        self.addWidget(self.message)

    def show_content(self) -> None:
        if self.currentWidget() is not self.content:
            self.setCurrentWidget(self.content)

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.setCurrentWidget(self.message)


def foreground_color() -> QtGui.QColor:
    """pyqtgraph's configured foreground: text drawn in plots stays readable on either background."""
    return pg.mkColor(pg.getConfigOption("foreground"))


class PanelHeatmap(LabeledHeatmap):
    """A LabeledHeatmap that remembers what it was last asked to show (for `shown_data`) and applies the
    view's colour map only when it changes."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, rows_title: str = "",
                 cols_title: str = "", header: Note | None = None):
        super().__init__(parent)
        self._header = header  # when given, titles go to this wrapping label instead of the heatmap's own
        self.record: dict = {}
        self._options: tuple = ()
        self._view_cmap: str | None = None
        self._axis_titles = ("", "")
        self.titles(rows_title, cols_title)

    def titles(self, rows: str, cols: str) -> None:
        if (rows, cols) != self._axis_titles:
            self._axis_titles = (rows, cols)
            self.set_axis_titles(rows, cols)

    def use_colormap(self, name: str) -> None:
        if name != self._view_cmap:
            self._view_cmap = name
            self.set_colormap(name)

    def draw(self, matrix: np.ndarray, rows: list[str] | None, cols: list[str] | None, *, title: str,
             colormap: str, masked: np.ndarray | None = None, levels: tuple[float, float] | None = None,
             symmetric: bool | None = None) -> None:
        self.use_colormap(colormap)
        if self._header is not None:
            self._header.show_text(title)
        if self._unchanged(matrix, rows, cols, title, masked, levels, symmetric):
            return  # a toggle that did not touch this picture: nothing to redraw
        own_title = "" if self._header is not None else title
        self.set_data(matrix, rows, cols, title=own_title, masked=masked, levels=levels, symmetric=symmetric)
        self.record = {"matrix": matrix, "rows": rows, "cols": cols, "masked": masked, "title": title,
                       "levels": self.levels()}
        self._options = (levels, symmetric)

    def _unchanged(self, matrix, rows, cols, title, masked, levels, symmetric) -> bool:
        r = self.record
        if "matrix" not in r or (levels, symmetric) != self._options or (rows, cols, title) != (
                r["rows"], r["cols"], r["title"]):
            return False
        if (masked is None) != (r["masked"] is None):
            return False
        same_mask = masked is None or np.array_equal(masked, r["masked"])
        return same_mask and np.array_equal(matrix, r["matrix"], equal_nan=True)

    def clear(self, message: str = "") -> None:
        super().clear(message)
        self.record = {"message": message}
        if self._header is not None:
            self._header.show_text("")

