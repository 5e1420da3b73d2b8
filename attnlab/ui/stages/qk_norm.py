"""QK-norm of one site: the chosen head's projected Q and K before and after their RMSNorms, a 2 × 2 grid
(queries above, keys below). Draws the view-model of present/views/qk_norm.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.qk_norm import qk_norm_view
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note, draw_matrix, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

PARTS = ("q_in", "q_normed", "k_in", "k_normed")  # in reading order: row by row


class QKNormPanel(StagePanel):
    """Q before | after, K before | after ([tokens × d_k] each)."""

    kinds = ("qk_norm",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        boxes = {p: titled_heatmap(self, cols_title="d_k dimension") for p in PARTS}
        self._maps = {p: m for p, (_, m) in boxes.items()}
        grid = QtWidgets.QGridLayout()
        for i, (box, _) in enumerate(boxes.values()):
            grid.addWidget(box, i // 2, i % 2)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addLayout(grid, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = qk_norm_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            for m in self._maps.values():
                m.clear(shown.message)
            self._note.show_text("")
            self._data = {"message": shown.message}
            return
        for p in PARTS:
            draw_matrix(self._maps[p], getattr(shown, p), view.colormap)
        self._header.show_text(shown.heading)
        self._note.show_text(shown.note)
        self._data = {
            "head": shown.head,
            "n_heads": shown.n_heads,
            "kv_head": shown.kv_head,
            **{p: dict(m.record) for p, m in self._maps.items()},
        }

    def shown_data(self) -> dict:
        return dict(self._data)
