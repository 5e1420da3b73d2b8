"""Input stages: tokenization (chips), token embeddings, and the layer input (embedding + position); the
positional-encoding stage is in positional.py. The numbers and words come from present/views/inputs.py."""

from __future__ import annotations

from PySide6 import QtGui, QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.engine_api import Trace
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.inputs import Chip, InputSumView, embed_view, input_sum_view, tokens_view
from attnlab.present.views.model import MatrixView, MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, PanelHeatmap, draw_matrix, note_font, titled_heatmap
from attnlab.ui.stages.flow import flow_container
from attnlab.ui.window import zoom

CHIP_STYLE = """
QLabel[chip] { border-radius: 9px; border-width: 2px; }
QLabel[chip="word"]    { background: #e6f0fb; color: #0d2440; border-style: solid; border-color: #3b7dd8; }
QLabel[chip="special"] { background: #fff2cc; color: #5a3d00; border-style: dashed; border-color: #c98a00; }
QLabel[chip="pad"]     { background: #ececec; color: #5a5a5a; border-style: dotted; border-color: #8a8a8a; }
QLabel[chip="unk"]     { background: #fde3e1; color: #6b1510; border-style: dashed; border-color: #c0392b; }
"""


MAX_CHIP_ROWS_PX = 420  # the chips ask for at most this height; more rows scroll


class TokensPanel(StagePanel):
    """The text split into its pieces: one chip per token with its position and id; specials stand out."""

    kinds = ("tokens",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = Note(self, delta=2, bold=True)
        scroll, self._inner, self._flow = flow_container(self)
        self._scroll = scroll
        self._inner.setStyleSheet(CHIP_STYLE)
        self._count = Note(self, delta=1)
        self._legend = Note(self)
        self._stack = MessageStack(scroll, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._count)
        layout.addWidget(self._legend)
        self._chips: list[QtWidgets.QLabel] = []
        self._shown: tuple[Chip, ...] | None = None
        self._data: dict = {}

    def _chip(self, i: int) -> QtWidgets.QLabel:
        while len(self._chips) <= i:
            chip = QtWidgets.QLabel(self._inner)
            chip.setTextFormat(Qt.TextFormat.RichText)
            chip.setAlignment(Qt.AlignmentFlag.AlignCenter)
            chip.setContentsMargins(10, 4, 10, 4)
            chip.setProperty("chip", "")
            self._flow.addWidget(chip)
            self._chips.append(chip)
        return self._chips[i]

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
            self._fill(shown.chips)
        self._count.show_text(shown.count)
        self._legend.show_text(shown.legend)
        self._fit_chips()

    def _fit_chips(self) -> None:
        """Room for every chip at the width the panel has (up to MAX_CHIP_ROWS_PX): the window gives the chips
        the explanation's room rather than hiding the last row below a scroll bar."""
        width = self._scroll.viewport().width()
        if width <= 1 or not self._chips:
            return
        need = min(self._flow.heightForWidth(width), MAX_CHIP_ROWS_PX)
        if need != self._scroll.minimumHeight():
            self._scroll.setMinimumHeight(need)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_chips()

    def _fill(self, chips: tuple[Chip, ...]) -> None:
        for shown in chips:
            chip = self._chip(shown.position)
            text = shown.printable.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            chip.setText(
                f"<div style='font-size:11pt;color:#777'>{shown.position}</div>"
                f"<div style='font-size:24pt'>{text}</div>"
                f"<div style='font-size:12pt;color:#555'>id {shown.token_id}</div>"
            )
            if chip.property("chip") != shown.kind:
                chip.setProperty("chip", shown.kind)
                chip.style().unpolish(chip)
                chip.style().polish(chip)
            chip.setVisible(True)
        for chip in self._chips[len(chips) :]:
            chip.setVisible(False)
        self._flow.invalidate()

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
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._map, 1)
        layout.addWidget(self._note)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
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
        row = QtWidgets.QHBoxLayout()
        row.addWidget(boxes["embed"][0], 1)
        row.addWidget(self._plus)
        row.addWidget(self._pos_box, 1)
        row.addWidget(self._equals)
        row.addWidget(boxes["input"][0], 1)
        self._note = Note(self, reserve_lines=3)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def _operator(self, text: str) -> QtWidgets.QLabel:
        label = QtWidgets.QLabel(text, self)
        label.setFont(note_font(12, bold=True))
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        return label

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
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
