"""A sparse mixture of experts: the router's probabilities, tokens × experts, each token's chosen experts
marked with their weight, beside the weighted sum of the chosen experts' outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.present.stages import MOE, Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.moe import moe_view
from attnlab.ui.plots.axes import tick_font
from attnlab.ui.plots.cell_texts import CellText, CellTexts
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, draw_matrix, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

MAX_MARKS = 4000  # more chosen cells than this: no weights are written (the outlines stay)


class MoEPanel(StagePanel):
    """router softmax [tokens × experts] with the chosen cells marked, and the output [tokens × d_model]."""

    kinds = (MOE,)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._summary = Note(self, delta=2, bold=True)
        router_box, self._router = titled_heatmap(self, rows_title="token", cols_title="expert")
        out_box, self._out = titled_heatmap(self, cols_title="model dimension")
        self._marks = CellTexts(tick_font())  # "● 62%" in each chosen cell, "●" where that does not fit
        self._router.view_box().addItem(self._marks)
        maps = QtWidgets.QHBoxLayout()
        maps.addWidget(router_box, 3)  # the router map carries the token labels and its colour bar: the wider half
        maps.addWidget(out_box, 2)
        self._note = Note(self)
        body = QtWidgets.QWidget(self)
        body_layout = QtWidgets.QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(self._summary)
        body_layout.addLayout(maps, 1)
        body_layout.addWidget(self._note)
        self._stack = MessageStack(body, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._stack)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = moe_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._data = {"message": shown.message}
            self._stack.show_message(shown.message)
            return
        self._stack.show_content()
        draw_matrix(self._router, shown.router, view.colormap)
        draw_matrix(self._out, shown.out, view.colormap)
        marks = shown.marks if len(shown.marks) <= MAX_MARKS else []
        probs = shown.router.matrix  # light text on the dark (unlikely) cells, dark on bright ones
        self._marks.set_texts([CellText(r, e, text, "●", bool(probs[r, e] < 0.5)) for r, e, text in marks])
        self._marks.set_outlines([(r, e) for r, e, _text in shown.marks])  # outlined at any size
        self._summary.show_text(shown.summary)
        self._note.show_text(shown.note)
        self._data = {
            "router": dict(self._router.record),
            "out": dict(self._out.record),
            "chosen": shown.chosen,
            "weights": shown.weights,
            "marks": [cell.text for cell in self._marks.texts()],
            "outlined": self._marks.outlines(),
            "load": shown.load,
        }

    def shown_data(self) -> dict:
        return dict(self._data)
