"""The factorised embedding (ALBERT, ELECTRA): E[id] in the narrow table, LayerNorm of the sum in the same
width, then × W_proj + b to d_model; three heatmaps on one colour scale. Numbers and words from
present/views/factorised.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.factorised import FACTORISED, factorised_view
from attnlab.present.views.model import MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note, draw_matrix, note_font, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

PARTS = ("token", "normed", "projected")
OPERATORS = ("→ + P + T, LayerNorm →", "× W_proj + b →")


class FactorisedPanel(StagePanel):
    """E[id] [T × e] → LayerNorm(E[id] + P + T) [T × e] → × W_proj + b [T × d]."""

    kinds = (FACTORISED,)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        row = QtWidgets.QHBoxLayout()
        self._maps = {}
        for i, part in enumerate(PARTS):
            box, heatmap = titled_heatmap(self, rows_title="token" if i == 0 else "", cols_title="dimension")
            if i < len(PARTS) - 1:
                heatmap.colorbar().setVisible(False)  # one colour scale: the last map's bar serves all three
            self._maps[part] = heatmap
            row.addWidget(box, 1)
            if i < len(OPERATORS):
                label = QtWidgets.QLabel(OPERATORS[i], self)
                label.setFont(note_font(2, bold=True))
                label.setAlignment(Qt.AlignmentFlag.AlignCenter)
                row.addWidget(label)
        self._note = Note(self, reserve_lines=3)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = factorised_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            for heatmap in self._maps.values():
                heatmap.clear(shown.message)
            self._data = {"message": shown.message}
            return
        for part in PARTS:
            draw_matrix(self._maps[part], getattr(shown, part), view.colormap)
        self._note.show_text(shown.note)
        self._data = {part: getattr(shown, part).matrix for part in PARTS} | {"e": shown.e, "d": shown.d}

    def shown_data(self) -> dict:
        return dict(self._data)
