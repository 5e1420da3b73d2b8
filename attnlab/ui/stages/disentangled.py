"""DeBERTa's score terms (content → content, content → position, position → content): the term map of the
selected head and, for a position term, the map of δ (the row of the relative table each cell reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.disentangled import term_view
from attnlab.present.views.model import MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note, draw_matrix, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class ScoreTermPanel(StagePanel):
    """One of DeBERTa's (or BERT relative_key's) score terms [Tq × Tk] beside the relative rows it reads."""

    kinds = ("c2c", "c2p", "p2c", "rel_key", "rel_query")  # DeBERTa; BERT relative_key

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        term_box, self._map = titled_heatmap(self, cols_title="key")
        self._rows_box, self._rows = titled_heatmap(self, cols_title="key")
        row = QtWidgets.QHBoxLayout()
        row.addWidget(term_box, 1)
        row.addWidget(self._rows_box, 1)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = term_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._map.clear(shown.message)
            self._rows_box.setVisible(False)
            self._note.show_text("")
            self._data = {"message": shown.message, "kind": shown.kind}
            return
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._header.show_text(shown.heading)
        self._rows_box.setVisible(shown.rows is not None)
        if shown.rows is not None:
            draw_matrix(self._rows, shown.rows, view.colormap)
        self._data = {
            **self._map.record,
            "rows": dict(self._rows.record) if shown.rows is not None else None,
            "head": shown.head,
            "n_heads": shown.n_heads,
            "kind": shown.kind,
        }
        self._note.show_text(shown.note)

    def shown_data(self) -> dict:
        return dict(self._data)
