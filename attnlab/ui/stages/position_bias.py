"""The position-bias stage: the bias B [Tq × Tk] of the selected head and, for T5's relative buckets, the
bucket of every cell beside it, drawn from the view-model (present/views/position_bias.py). The scores with the
bias added are drawn by AttentionMapPanel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.position_bias import bias_view
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note, draw_matrix, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class BiasPanel(StagePanel):
    """[bucket matrix |] B of the selected head, a header and the head's slope or range under them."""

    kinds = ("bias",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._bucket_box, self._buckets = titled_heatmap(self)
        bias_box, self._map = titled_heatmap(self)
        self._note = Note(self)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self._bucket_box, 1)
        row.addWidget(bias_box, 1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = bias_view(trace, stage, view, self.vocab)
        self._header.show_text(stage.title)
        if isinstance(shown, MessageView):
            self._bucket_box.setVisible(False)
            self._map.clear(shown.message)
            self._note.show_text("")
            self._data = dict(self._map.record)
            return
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._data = {**self._map.record, "head": shown.head, "n_heads": shown.n_heads, "kind": shown.kind}
        self._bucket_box.setVisible(shown.buckets is not None)
        if shown.buckets is not None:
            draw_matrix(self._buckets, shown.buckets, view.colormap)
            self._data["buckets"] = self._buckets.record.get("matrix")
        self._note.show_text(shown.note)

    def shown_data(self) -> dict:
        return dict(self._data)
