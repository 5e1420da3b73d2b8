"""Helpers shared by the stage panels: token labels of a site, head clamping, notes, a recording heatmap."""

from __future__ import annotations

import re

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.facts import (  # noqa: F401 (re-exported for the panels)
    SPECIAL_TOKENS,
    array,
    layer_name,
    layer_side,
    missing,
    missing_message,
    norm_placement,
    residual_on,
    row_labels,
    run_temperature,
    scaling_on,
    side_name,
    site_name,
    site_sides,
    sublayer_kind,
    sublayer_output,
    tokens,
)
from attnlab.present.labels import value_word
from attnlab.present.views.model import MatrixView
from attnlab.present.views.site import axis_title, clamp_head  # noqa: F401 (re-exported for the panels)
from attnlab.ui.plots.axes import name_scale
from attnlab.ui.plots.heatmap import LabeledHeatmap
from attnlab.ui.stages.token_ticks import TokenTicks  # noqa: F401 (re-exported for the panels)
from attnlab.ui.window import zoom
from attnlab.ui.window.steady import SteadyHeight

NOTE_POINT_SIZE = 12


# ---------------------------------------------------------------------------------------- widgets
def note_font(delta: float = 0.0, bold: bool = False) -> QtGui.QFont:
    font = QtGui.QFont(QtWidgets.QApplication.font())
    font.setPointSizeF(max(font.pointSizeF(), zoom.points(NOTE_POINT_SIZE)) + zoom.points(delta))
    font.setBold(bold)
    return font


class Note(QtWidgets.QLabel):
    """A wrapped line of explanatory text under or above a picture; setText only when it changes."""

    def __init__(
        self, parent: QtWidgets.QWidget | None = None, *, delta: float = 0.0, bold: bool = False, reserve_lines: int = 0
    ):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setFont(note_font(delta, bold))
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Minimum)
        reserved = QtGui.QFontMetrics(self.font()).lineSpacing() * reserve_lines + 4 if reserve_lines else 0
        # a steady height: texts of different lengths do not re-layout the panel (and repaint its plots)
        self._steady = SteadyHeight(self, reserved)

    def show_text(self, text: str, alternatives: tuple[str, ...] = ()) -> None:
        """Show `text`; `alternatives` are the texts a toggle may switch this note to (its height makes room
        for the tallest from the start, so the first toggle to a longer one moves nothing)."""
        if alternatives != self._steady.alternatives:
            self._steady.alternatives = alternatives
            self._steady.fit()
        if text != self.text():
            self.setText(text)
            self._steady.fit()
        self.setVisible(bool(text))


class TitleLabel(QtWidgets.QLabel):
    """A bold one-line title above a picture whose width never depends on its text (no re-layout when the
    text changes); a text too long for the space ends in '…', the full text is in the tooltip."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setFont(note_font(0, bold=True))
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self._full = ""

    def show_text(self, text: str) -> None:
        if text != self._full:
            self._full = text
            self.setToolTip(text)
            self._elide()

    def full_text(self) -> str:
        return self._full

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, max(self.width(), 20))
        if shown != self.text():
            self.setText(shown)


class WrapTitle(TitleLabel):
    """A TitleLabel that wraps onto more lines instead of eliding (add & norm's titles are whole, issue 32); its
    owner keeps the titles of a row at one height (`even_heights`), so the pictures under them line up."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Minimum)

        self.row: list[WrapTitle] = [self]  # the titles side by side with this one (kept at one height)

    def _elide(self) -> None:
        shown = self._full.replace("(", "(\u200b")  # a formula may break after "(" (a zero-width space)
        if self.text() != shown:
            self.setText(shown)
            QtCore.QTimer.singleShot(0, self, lambda: even_heights(self.row))

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        QtCore.QTimer.singleShot(0, self, lambda: even_heights(self.row))  # after the row's layout has run

    def widest_piece(self) -> int:
        """The pixels of the longest piece the title cannot break inside (it breaks at spaces, after a hyphen
        and after "(")."""
        pieces = re.split(r"(?<=[-(])|\s+", self._full)
        return max((self.fontMetrics().horizontalAdvance(p) for p in pieces), default=0)


def even_heights(titles: list[WrapTitle]) -> None:
    """Each title as tall as the tallest at its width now (the pictures under a row of titles line up)."""
    tallest = max((t.heightForWidth(max(t.width(), 1)) for t in titles if t.text()), default=0)
    for title in titles:
        if title.minimumHeight() != tallest:
            title.setMinimumHeight(tallest)


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

    def __init__(
        self,
        parent: QtWidgets.QWidget | None = None,
        *,
        rows_title: str = "",
        cols_title: str = "",
        header: Note | TitleLabel | None = None,
        row_floor: float = zoom.ROW_PX_MATRIX,
    ):
        super().__init__(parent, row_floor=row_floor)
        self._header = header  # when given, titles go to this wrapping label instead of the heatmap's own
        self.record: dict = {}
        self._options: tuple = ()
        self._view_cmap: str | None = None
        self._axis_titles = ("", "")
        self.titles(rows_title, cols_title)
        self._spans: tuple[tuple[str, int, int], ...] = ()
        self._span_lines: list[pg.InfiniteLine] = []

    def mark_spans(self, spans: tuple[tuple[str, int, int], ...]) -> None:
        """Dashed lines along both axes where a conversation's turns begin and end (nothing when `spans` is
        empty); `record["spans"]` keeps what was marked."""
        self.record["spans"] = spans
        if spans == self._spans:
            return
        for line in self._span_lines:
            self.plot_item().removeItem(line)
        self._spans, self._span_lines = spans, []
        pen = pg.mkPen("#6c3483", width=1.5, style=Qt.PenStyle.DashLine)
        for edge in sorted({e for _role, a, b in spans for e in (a, b)}):
            for angle in (0, 90):  # rows (queries) and columns (keys)
                line = pg.InfiniteLine(pos=edge - 0.5, angle=angle, pen=pen, movable=False)
                self.plot_item().addItem(line)
                self._span_lines.append(line)

    def titles(self, rows: str, cols: str) -> None:
        if (rows, cols) != self._axis_titles:
            self._axis_titles = (rows, cols)
            self.set_axis_titles(rows, cols)

    def title_text(self) -> str:
        """The whole title (a TitleLabel header may show it elided)."""
        header = self._header
        return header.full_text() if isinstance(header, TitleLabel) else header.text() if header else self._title

    def header(self) -> Note | TitleLabel | None:
        """The label above the map that shows its title (None: the map's own title line)."""
        return self._header

    def title_font(self) -> QtGui.QFont:
        return (self._header or self._title_label).font()

    def number_from(self, first_row: int, first_col: int) -> None:
        """Numbered ticks count rows from `first_row` and columns from `first_col` (a window of positions)."""
        self._left.set_first(first_row)
        self._bottom.set_first(first_col)

    def use_colormap(self, name: str) -> None:
        if name != self._view_cmap:
            self._view_cmap = name
            self.set_colormap(name)

    def draw(
        self,
        matrix: np.ndarray,
        rows: list[str] | None,
        cols: list[str] | None,
        *,
        title: str,
        colormap: str,
        masked: np.ndarray | None = None,
        levels: tuple[float, float] | None = None,
        symmetric: bool | None = None,
    ) -> None:
        self.use_colormap(colormap)
        if self._header is not None:
            self._header.show_text(title)
        if self._unchanged(matrix, rows, cols, title, masked, levels, symmetric):
            return  # a toggle that did not touch this picture: nothing to redraw
        own_title = "" if self._header is not None else title
        self.set_data(matrix, rows, cols, title=own_title, masked=masked, levels=levels, symmetric=symmetric)
        self.record = {
            "matrix": matrix,
            "rows": rows,
            "cols": cols,
            "masked": masked,
            "title": title,
            "levels": self.levels(),
        }
        self._options = (levels, symmetric)

    def draw_source(self, matrix: MatrixView, colormap: str) -> None:
        """Draw a long map (`matrix.source`) with level of detail; `record` holds the overview drawn."""
        self.use_colormap(colormap)
        if self._header is not None:
            self._header.show_text(matrix.title)
        if self.record.get("source") is matrix.source and self._options == (matrix.levels, matrix.symmetric):
            return
        own_title = "" if self._header is not None else matrix.title
        assert matrix.source is not None
        self.set_source(
            matrix.source,
            matrix.rows,
            matrix.cols,
            title=own_title,
            levels=matrix.levels,
            symmetric=matrix.symmetric,
        )
        self.record = {
            "matrix": self._raw,
            "rows": matrix.rows,
            "cols": matrix.cols,
            "masked": self._bad,
            "title": matrix.title,
            "levels": self.levels(),
            "source": matrix.source,
        }
        self._options = (matrix.levels, matrix.symmetric)

    def _overview_shown(self) -> None:
        """A long map's overview was drawn again: the record holds what is shown."""
        if "source" in self.record:
            self.record.update(matrix=self._raw, masked=self._bad, levels=self.levels())

    def _unchanged(
        self,
        matrix: np.ndarray,
        rows: list[str] | None,
        cols: list[str] | None,
        title: str,
        masked: np.ndarray | None,
        levels: tuple[float, float] | None,
        symmetric: bool | None,
    ) -> bool:
        r = self.record
        if (
            "matrix" not in r
            or (levels, symmetric) != self._options
            or (rows, cols, title) != (r["rows"], r["cols"], r["title"])
        ):
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


def draw_matrix(panel_map: PanelHeatmap, matrix: MatrixView, colormap: str) -> None:
    """Draw a view-model's matrix: its numbers, axis labels, title and colour scale, in the chosen colour map."""
    if matrix.axes is not None:
        panel_map.titles(*matrix.axes)
    panel_map.set_value_role(value_word(matrix.name))
    panel_map.number_from(matrix.first_row, matrix.first_col)  # 0, 0 unless a window of positions is shown
    name_scale(panel_map.colorbar(), matrix.scale_label)  # a percentile scale says so (weight_scale.py)
    if matrix.source is not None:  # a long map: overview and exact windows read from its source
        panel_map.draw_source(matrix, colormap)
    else:
        draw_plain(panel_map, matrix, colormap)
    panel_map.mark_spans(matrix.spans)  # a conversation's turns (present/chat_marks.py)


def draw_plain(panel_map: PanelHeatmap, matrix: MatrixView, colormap: str) -> None:
    panel_map.draw(
        matrix.matrix,
        matrix.rows,
        matrix.cols,
        title=matrix.title,
        colormap=colormap,
        masked=matrix.masked,
        levels=matrix.levels,
        symmetric=matrix.symmetric,
    )


def titled_heatmap(
    parent: QtWidgets.QWidget, *, row_floor: float = zoom.ROW_PX_MATRIX, wrap: bool = False, **kwargs: str
) -> tuple[QtWidgets.QWidget, PanelHeatmap]:
    """A heatmap under its own TitleLabel (`wrap`: a WrapTitle), in one widget to put side by side with others."""
    box = QtWidgets.QWidget(parent)
    title = WrapTitle(box) if wrap else TitleLabel(box)
    heatmap = PanelHeatmap(box, header=title, row_floor=row_floor, **kwargs)
    layout = QtWidgets.QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(title)
    layout.addWidget(heatmap, 1)
    return box, heatmap
