"""The logit lens: layers × positions, each cell the top next-token guess after that layer (its text in the
cell, its probability as the colour); hovering a cell reads out the top-k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.lens import LensView, lens_side, lens_view
from attnlab.present.views.model import MessageView
from attnlab.ui.plots.axes import tick_font
from attnlab.ui.plots.cell_texts import CellText, CellTexts
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, PanelHeatmap, TitleLabel, draw_matrix
from attnlab.ui.stages.windowed import PositionWindowing

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

LENS_COLUMN_PX = 48.0  # a readable lens column: a cell's token text (CELL_CHARS characters of the tick font)

MAX_CELL_TEXTS = 4000  # more cells than this: no texts are laid out, the hover names the tokens


class LensHeatmap(PanelHeatmap):
    """A heatmap whose hover readout is the view-model's top-k text of the cell."""

    hover: list[list[str]] = []

    def describe_cell(self, r: int, c: int) -> str:
        if 0 <= r < len(self.hover) and 0 <= c < len(self.hover[r]):
            return self.hover[r][c]
        return super().describe_cell(r, c)


class LensPanel(StagePanel):
    """The residual stream after each layer through the final norm and the output projection."""

    kinds = ("lens",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        title = TitleLabel(self)
        self._map = LensHeatmap(self, header=title)
        self._texts = CellTexts(tick_font())  # each cell's top token, cut to fit its cell
        self._map.view_box().addItem(self._texts)
        self._note = Note(self)
        body = QtWidgets.QWidget(self)
        body_layout = QtWidgets.QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(title)
        body_layout.addWidget(self._map, 1)
        self.windowing = PositionWindowing(self, self._map, LENS_COLUMN_PX, across=True)
        body_layout.addWidget(self.windowing.bar)
        body_layout.addWidget(self._note)
        self._stack = MessageStack(body, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._stack)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        view = self.windowing.view(trace, stage, view, lens_side(trace))
        shown = lens_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._data = {"message": shown.message}
            self._stack.show_message(shown.message)
            return
        self._stack.show_content()
        self._map.hover = shown.hover
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._texts.set_texts(self._cell_texts(shown))
        self._note.show_text(shown.note)
        self._data = {
            "lens": dict(self._map.record),
            "cell_texts": shown.cell_texts,
            "hover": shown.hover,
            "ids": shown.ids,
            "probs": shown.probs,
            "norm": shown.norm,
        }

    @staticmethod
    def _cell_texts(shown: LensView) -> list[CellText]:
        """Each cell's token, light on unlikely (dark) cells and dark on likely (bright) ones."""
        top = shown.matrix.matrix  # [L + 1, T]
        if top.size > MAX_CELL_TEXTS:
            return []
        return [
            CellText(r, c, text, "", bool(top[r, c] < 0.5))
            for r, row in enumerate(shown.cell_texts)
            for c, text in enumerate(row)
        ]

    def shown_data(self) -> dict:
        return dict(self._data)
