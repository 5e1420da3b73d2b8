"""The KV-cache stage of a decoder self-attention: the cached K and V of the K/V head the chosen query head reads,
as of the timeline's step (rows read from the cache, the step's new row last), and what the cache shares and
costs. Draws the view-model of present/views/kv_cache.py."""

from __future__ import annotations

from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.kv_cache import KVCacheView
from attnlab.present.views.model import MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note, draw_matrix, titled_heatmap


class KVCachePanel(StagePanel):
    """K cache over V cache ([tokens × d_k] each, one above the other as the Q, K, V stage draws them: side by
    side, each got a few pixels per d_k column), the step's sentence above, the cache's sharing and cost below."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        k_box, self._k = titled_heatmap(self, cols_title="d_k dimension")
        v_box, self._v = titled_heatmap(self, cols_title="d_k dimension")
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(k_box, 1)
        layout.addWidget(v_box, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def show_view(self, shown: KVCacheView | MessageView, stage: Stage, view: ViewState) -> None:
        if isinstance(shown, MessageView):
            self._k.clear(shown.message)
            self._v.clear(shown.message)
            self._header.show_text("")
            self._note.show_text("")
            self._data = {"message": shown.message}
            return
        draw_matrix(self._k, shown.k, view.colormap)
        draw_matrix(self._v, shown.v, view.colormap)
        self._header.show_text(shown.notes[0])
        self._note.show_text("\n".join(shown.notes[1:]))
        self._data = {
            "position": shown.position,
            "reused": shown.reused,
            "new": shown.new,
            "kv_head": shown.kv_head,
            "groups": shown.groups,
            "bytes_per_token": shown.bytes_per_token,
            "k": dict(self._k.record),
            "v": dict(self._v.record),
        }

    def shown_data(self) -> dict:
        return dict(self._data)
