"""Input stages: tokenization (chips), token embeddings, and the layer input (embedding + position); the
positional-encoding stage is in positional.py. The numbers and words come from present/views/inputs.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.inputs import Chip, InputSumView, embed_view, input_sum_view, tokens_view
from attnlab.present.views.model import MatrixView, MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, PanelHeatmap, draw_matrix, note_font, titled_heatmap
from attnlab.ui.stages.folding_row import FoldingRow
from attnlab.ui.stages.token_chips import ChipList
from attnlab.ui.stages.windowed import PositionWindowing
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

MAX_CHIP_ROWS_PX = 420  # the chips ask for at most this height; more rows scroll


class TokensPanel(StagePanel):
    """The text split into its pieces: one chip per token with its position and id; specials stand out. The chips
    are painted by one list view (token_chips.py), only those in view: 8,192 tokens are one widget."""

    kinds = ("tokens",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = Note(self, delta=2, bold=True)
        self._scroll = ChipList(self)
        self._count = Note(self, delta=1)
        self._legend = Note(self)
        self._stack = MessageStack(self._scroll, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._count)
        layout.addWidget(self._legend)
        self._shown: tuple[Chip, ...] | None = None
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = tokens_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._data = {"message": shown.message}
            self._stack.show_message(shown.message)
            return
        self._data = {
            "tokens": shown.pieces,
            "ids": shown.ids,
            "specials": [chip.kind != "word" for chip in shown.chips],
            "count": len(shown.chips),
        }
        self._stack.show_content()
        self._title.show_text(shown.title)
        if self._shown != shown.chips:
            self._shown = shown.chips
            self._scroll.set_chips(shown.chips)
        self._count.show_text(shown.count)
        self._legend.show_text(shown.legend)
        self._fit_chips()

    def _fit_chips(self) -> None:
        """Room for every chip at the width the panel has (up to MAX_CHIP_ROWS_PX): the window gives the chips
        the explanation's room rather than hiding the last row below a scroll bar."""
        width = self._scroll.viewport().width()
        if width <= 1 or not self._shown:
            return
        need = min(self._scroll.needed_height(width), MAX_CHIP_ROWS_PX)
        if need != self._scroll.minimumHeight():
            self._scroll.setMinimumHeight(need)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_chips()

    def shown_data(self) -> dict:
        return dict(self._data)


class EmbeddingPanel(StagePanel):
    """[tokens × d_model] token embeddings: one row of the embedding table per token."""

    kinds = ("embed",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(
            self, rows_title="token", cols_title="model dimension", header=self._header, row_floor=zoom.ROW_PX_SINGLE
        )
        self._note = Note(self)
        self.windowing = PositionWindowing(self, self._map, zoom.ROW_PX_SINGLE)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._map, 1)
        layout.addWidget(self.windowing.bar)
        layout.addWidget(self._note)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        view = self.windowing.view(trace, stage, view, stage.side or "src")
        shown = embed_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._map.clear(shown.message)
            self._note.show_text("")
            return
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._note.show_text(shown.note)

    def shown_data(self) -> dict:
        return dict(self._map.record)


class InputSumPanel(StagePanel):
    """embedding + positional encoding = the input of the first layer, three heatmaps on one colour scale."""

    kinds = ("input",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        boxes = {
            part: titled_heatmap(self, rows_title="token" if part == "embed" else "", cols_title="model dimension")
            for part in ("embed", "pos", "input")
        }
        self._maps = {part: m for part, (_, m) in boxes.items()}
        self._pos_box = boxes["pos"][0]
        for part in ("embed", "pos"):  # one colour scale for all three: the sum's colour bar serves them all
            self._maps[part].colorbar().setVisible(False)
        self._plus = self._operator("+")
        self._equals = self._operator("=")
        row = self._row = FoldingRow()  # one under the other in a narrow centre column
        row.addWidget(boxes["embed"][0], 1)
        row.addWidget(self._plus)
        row.addWidget(self._pos_box, 1)
        row.addWidget(self._equals)
        row.addWidget(boxes["input"][0], 1)
        self._note = Note(self, reserve_lines=3)
        self.windowing = PositionWindowing(self, self._maps["input"], zoom.ROW_PX_MATRIX)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(row, 1)
        layout.addWidget(self.windowing.bar)
        layout.addWidget(self._note)
        self._data: dict = {}

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._row.fit()

    def _operator(self, text: str) -> QtWidgets.QLabel:
        label = QtWidgets.QLabel(text, self)
        label.setFont(note_font(12, bold=True))
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        return label

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        view = self.windowing.view(trace, stage, view, stage.side or "src")
        shown = input_sum_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            for m in self._maps.values():
                m.clear(shown.message)
            self._data = {"message": shown.message}
            return
        self._equals.setText(shown.operator)
        parts: dict[str, MatrixView] = {"embed": shown.embed, "pos": shown.added, "input": shown.input}
        for part, matrix in parts.items():
            if matrix.message:  # the box stays in place (no re-layout on the toggle) and says why it is empty
                self._maps[part].clear(matrix.message)
            else:
                draw_matrix(self._maps[part], matrix, view.colormap)
        self._data = {**self._maps["input"].record, **self._shown_parts(shown)}
        self._note.show_text(shown.note.text, alternatives=shown.note.alternatives)

    @staticmethod
    def _shown_parts(shown: InputSumView) -> dict:
        """The parts as recorded, and what a BERT-like input adds (token type, the embedding LayerNorm)."""
        data: dict = {"embed": shown.embed_values, "pos": shown.pos_values}
        if shown.token_type is not None:
            data["type"] = shown.token_type
        if shown.embed_norm:
            data["embed_norm"] = True
        return data

    def shown_data(self) -> dict:
        return dict(self._data)
