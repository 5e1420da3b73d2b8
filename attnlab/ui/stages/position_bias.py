"""The position-bias stage (ALiBi): the bias B [Tq × Tk] of the selected head, drawn from its view-model
(present/views/position_bias.py). The scores with the bias added are drawn by AttentionMapPanel."""

from __future__ import annotations

from attnlab.present.engine_api import Trace
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.position_bias import bias_view
from attnlab.ui.stages.attention import MapPanel
from attnlab.ui.stages.common import draw_matrix


class BiasPanel(MapPanel):
    """B of the selected head: one heatmap, its title, and the head's slope under it."""

    kinds = ("bias",)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = bias_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._map.clear(shown.message)
            self._note.show_text("")
            self._data = dict(self._map.record)
            return
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._data = {**self._map.record, "head": shown.head, "n_heads": shown.n_heads, "kind": shown.kind}
        self._note.show_text(shown.note)
