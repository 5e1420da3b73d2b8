"""The position-wise feed-forward network: hidden activations (ReLU zeros stand out) and the output; for a gated
(SwiGLU) network also the gate and up projections whose product is the hidden layer."""

from __future__ import annotations

import numpy as np
from PySide6 import QtWidgets

from attnlab.present import words
from attnlab.present.engine_api import Trace, names
from attnlab.present.stages import Stage, ViewState
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    array,
    layer_name,
    layer_side,
    missing,
    missing_message,
    row_labels,
    titled_heatmap,
)

ACTIVATION_WORDS = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU", "silu": "SiLU"}


def run_activation(trace: Trace, hidden: np.ndarray) -> str:
    """The FFN's activation: the config's, or for a trace without one, 'relu' when no unit is negative."""
    if trace.config is not None and trace.config.activation in ACTIVATION_WORDS:
        return trace.config.activation
    return "relu" if not bool((hidden < 0).any()) else "gelu"


def activation_summary(activation: str, hidden: np.ndarray, gated: bool) -> str:
    """The bold line over the panel: ReLU's exact zeros, or how many units came out negative."""
    share = zero_share(hidden)
    if activation == "relu" and not gated:
        return f"{share:.0%} of hidden units are exactly 0 (ReLU) — hatched grey cells"
    negative = float(np.count_nonzero(hidden < 0)) / max(hidden.size, 1)
    word = ACTIVATION_WORDS[activation]
    if gated:
        return (
            f"SwiGLU-style gate: {word}(gate) ⊙ up — {negative:.0%} of the products are negative "
            f"(the up projection has either sign)"
        )
    return f"{word}: {negative:.0%} of hidden units are slightly negative, {share:.0%} exactly 0"


def zero_share(hidden: np.ndarray) -> float:
    """Fraction of hidden units that are exactly 0."""
    return float(np.count_nonzero(hidden == 0.0)) / max(hidden.size, 1)


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
        body_layout.addWidget(self._note)
        self._stack = MessageStack(body, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._stack)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        layer = stage.layer or ""
        lost = missing(trace, [names.ffn_entry(layer, "hidden"), names.ffn_entry(layer, "out")])
        if lost:
            self._data = {"message": missing_message("The feed-forward step", lost)}
            self._stack.show_message(self._data["message"])
            return
        self._stack.show_content()
        hidden = array(trace, names.ffn_entry(layer, "hidden"))  # [T, d_ff]
        out = array(trace, names.ffn_entry(layer, "out"))  # [T, d]
        labels = row_labels(trace, layer_side(layer), hidden.shape[0], self.vocab)  # decoder rows: "<s> → le"
        activation = run_activation(trace, hidden)
        gated = self._show_gate_and_up(trace, layer, labels, view)
        zeros = hidden == 0.0
        share = zero_share(hidden)
        t, d_ff = hidden.shape
        hatch = activation == "relu" and zeros.any()  # hatched zeros only where ReLU really cuts to 0
        self._hidden.draw(
            hidden,
            labels,
            None,
            masked=zeros if hatch else None,
            colormap=view.colormap,
            symmetric=True if activation != "relu" else None,
            title=f"{ACTIVATION_WORDS[activation]}(gate) ⊙ up" if gated else f"hidden units (d_ff = {d_ff})",
        )
        self._out.draw(
            out, labels, None, colormap=view.colormap, symmetric=True, title=f"{words.word('ffn.short')} output"
        )
        self._share.show_text(activation_summary(activation, hidden, gated))
        shape = "gate it, multiply by the up projection" if gated else "apply the non-linearity"
        self._note.show_text(
            f"{layer_name(layer)}: every token goes through the same network on its own — "
            f"widen to d_ff = {d_ff}, {shape}, shrink back to d_model = {out.shape[1]}. "
            "No information moves between tokens here."
        )
        self._data = {
            "hidden": dict(self._hidden.record),
            "out": dict(self._out.record),
            "zero_share": share,
            "zeros": zeros,
            "activation": activation,
            "tokens": labels,
            "gated": gated,
        }
        if gated:
            self._data.update({"gate": dict(self._gate.record), "up": dict(self._up.record)})

    def _show_gate_and_up(self, trace: Trace, layer: str, labels: list[str] | None, view: ViewState) -> bool:
        """Draw gate(x) and up(x) when this FFN is gated (their entries are in the trace); say whether it is."""
        gate_name, up_name = names.ffn_entry(layer, "gate"), names.ffn_entry(layer, "up")
        gated = gate_name in trace and up_name in trace
        for box in (self._gate_box, self._up_box):
            box.setVisible(gated)
        if not gated:  # hidden, but on the same colour map as the rest (switching models keeps them in step)
            self._gate.use_colormap(view.colormap)
            self._up.use_colormap(view.colormap)
        else:
            self._gate.draw(
                array(trace, gate_name), labels, None, colormap=view.colormap, symmetric=True, title="gate: x W_gate"
            )  # [T, d_ff]
            self._up.draw(
                array(trace, up_name), labels, None, colormap=view.colormap, symmetric=True, title="up: x W_up"
            )  # [T, d_ff]
        return gated

    def shown_data(self) -> dict:
        return dict(self._data)
