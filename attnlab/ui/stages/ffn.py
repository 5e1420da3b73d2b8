"""The position-wise feed-forward network: hidden activations (ReLU zeros stand out) and the output."""

from __future__ import annotations

import numpy as np
from PySide6 import QtWidgets

from attnlab.engine import names
from attnlab.engine.trace import Trace
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
    titled_heatmap,
    tokens,
)


def zero_share(hidden: np.ndarray) -> float:
    """Fraction of hidden units that are exactly 0."""
    return float(np.count_nonzero(hidden == 0.0)) / max(hidden.size, 1)


class FFNPanel(StagePanel):
    """hidden = act(x W₁ + b₁) [tokens × d_ff] and out = hidden W₂ + b₂ [tokens × d_model]."""

    kinds = ("ffn",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._share = Note(self, delta=2, bold=True)
        hidden_box, self._hidden = titled_heatmap(self, rows_title="token", cols_title="hidden unit (d_ff)")
        out_box, self._out = titled_heatmap(self, cols_title="model dimension")
        maps = QtWidgets.QHBoxLayout()
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
        labels = tokens(trace, layer_side(layer), hidden.shape[0])
        relu = not bool((hidden < 0).any())  # ReLU never outputs a negative number; GELU does
        zeros = hidden == 0.0
        share = zero_share(hidden)
        t, d_ff = hidden.shape
        self._hidden.draw(hidden, labels, None, masked=zeros if zeros.any() else None, colormap=view.colormap,
                          title=f"hidden units (d_ff = {d_ff})")
        self._out.draw(out, labels, None, colormap=view.colormap, symmetric=True,
                       title=f"{names.word('ffn.short')} output")
        if relu:
            self._share.show_text(f"{share:.0%} of hidden units are exactly 0 (ReLU) — hatched grey cells")
        else:
            negative = float(np.count_nonzero(hidden < 0)) / max(hidden.size, 1)
            self._share.show_text(f"GELU: {negative:.0%} of hidden units are slightly negative, "
                                  f"{share:.0%} exactly 0")
        self._note.show_text(f"{layer_name(layer)}: every token goes through the same two-layer network "
                             f"on its own — widen to d_ff = {d_ff}, apply the non-linearity, shrink back to "
                             f"d_model = {out.shape[1]}. No information moves between tokens here.")
        self._data = {"hidden": dict(self._hidden.record), "out": dict(self._out.record), "zero_share": share,
                      "zeros": zeros, "activation": "relu" if relu else "gelu", "tokens": labels}

    def shown_data(self) -> dict:
        return dict(self._data)
