"""The position-wise feed-forward network: hidden activations (ReLU zeros stand out) and the output; for a gated
(SwiGLU) network also the gate and up projections whose product is the hidden layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.ffn import FFNView, ffn_view
from attnlab.present.views.model import MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, draw_matrix, layer_side, titled_heatmap
from attnlab.ui.stages.windowed import PositionWindowing
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class FFNPanel(StagePanel):
    """hidden = act(x W₁ + b₁) [tokens × d_ff] and out = hidden W₂ + b₂ [tokens × d_model]."""

    kinds = ("ffn",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._share = Note(self, delta=2, bold=True)
        # gate and up: only for a gated (SwiGLU) network, hidden = act(gate) ⊙ up
        self._gate_box, self._gate = titled_heatmap(self, rows_title="token", cols_title="hidden unit (d_ff)")
        self._up_box, self._up = titled_heatmap(self, cols_title="hidden unit (d_ff)")
        hidden_box, self._hidden = titled_heatmap(self, rows_title="token", cols_title="hidden unit (d_ff)")
        out_box, self._out = titled_heatmap(self, cols_title="model dimension")
        maps = QtWidgets.QHBoxLayout()
        for box in (self._gate_box, self._up_box):
            maps.addWidget(box, 3)
            box.hide()
        maps.addWidget(hidden_box, 3)
        maps.addWidget(out_box, 2)
        self._note = Note(self)
        body = QtWidgets.QWidget(self)
        body_layout = QtWidgets.QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(self._share)
        body_layout.addLayout(maps, 1)
        self.windowing = PositionWindowing(self, self._hidden, zoom.ROW_PX_MATRIX)
        body_layout.addWidget(self.windowing.bar)
        body_layout.addWidget(self._note)
        self._stack = MessageStack(body, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._stack)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        view = self.windowing.view(trace, stage, view, layer_side(stage.layer or ""))
        shown_view = ffn_view(trace, stage, view, self.vocab)
        if isinstance(shown_view, MessageView):
            self._data = {"message": shown_view.message}
            self._stack.show_message(shown_view.message)
            return
        self._stack.show_content()
        self._show_gate_and_up(shown_view, view.colormap)
        draw_matrix(self._hidden, shown_view.hidden, view.colormap)
        draw_matrix(self._out, shown_view.out, view.colormap)
        self._share.show_text(shown_view.summary)
        self._note.show_text(shown_view.note)
        self._data = {
            "hidden": dict(self._hidden.record),
            "out": dict(self._out.record),
            "zero_share": shown_view.zero_share,
            "zeros": shown_view.zeros,
            "activation": shown_view.activation,
            "tokens": shown_view.tokens,
            "gated": shown_view.gated,
        }
        if shown_view.gated:
            self._data.update({"gate": dict(self._gate.record), "up": dict(self._up.record)})

    def _show_gate_and_up(self, shown_view: FFNView, colormap: str) -> None:
        """Draw gate(x) and up(x) when this FFN is gated; hide their boxes when it is not."""
        for box in (self._gate_box, self._up_box):
            box.setVisible(shown_view.gated)
        if shown_view.gate is None or shown_view.up is None:  # hidden, but on the colour map of the rest
            self._gate.use_colormap(colormap)
            self._up.use_colormap(colormap)
        else:
            draw_matrix(self._gate, shown_view.gate, colormap)  # [T, d_ff]
            draw_matrix(self._up, shown_view.up, colormap)  # [T, d_ff]

    def shown_data(self) -> dict:
        return dict(self._data)
