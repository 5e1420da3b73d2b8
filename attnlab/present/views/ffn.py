"""The position-wise feed-forward network as plain data: hidden activations (ReLU's exact zeros hatched), the
output, and for a gated (SwiGLU) network the gate and up projections whose product is the hidden layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present import words
from attnlab.present.facts import layer_name, layer_side, missing, missing_message, row_labels
from attnlab.present.position_range import first_of, read_rows, window_for, window_labels
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view

ACTIVATION_WORDS = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU", "silu": "SiLU"}


@dataclass(frozen=True)
class FFNView:
    activation: str  # a key of ACTIVATION_WORDS
    summary: str  # the bold line: ReLU's zeros, or how many units came out negative
    hidden: MatrixView  # [T, d_ff]
    out: MatrixView  # [T, d]
    gate: MatrixView | None  # [T, d_ff], only for a gated network
    up: MatrixView | None  # [T, d_ff], only for a gated network
    zeros: np.ndarray  # bool [T, d_ff]: hidden units that are exactly 0
    zero_share: float
    note: str
    tokens: list[str] | None

    kind = "ffn"

    @property
    def gated(self) -> bool:
        return self.gate is not None


def run_activation(trace: Trace, hidden: np.ndarray) -> str:
    """The FFN's activation: the config's, or for a trace without one, 'relu' when no unit is negative."""
    if trace.config.activation in ACTIVATION_WORDS:
        return trace.config.activation
    return "relu" if not bool((hidden < 0).any()) else "gelu"


def zero_share(hidden: np.ndarray) -> float:
    """Fraction of hidden units that are exactly 0."""
    return float(np.count_nonzero(hidden == 0.0)) / max(hidden.size, 1)


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


def ffn_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> FFNView | MessageView:
    layer = stage.layer or ""
    hidden_name, out_name = names.ffn_entry(layer, "hidden"), names.ffn_entry(layer, "out")
    lost = missing(trace, [hidden_name, out_name])
    if lost:
        return MessageView("ffn", missing_message("The feed-forward step", lost))
    side = layer_side(layer)
    window = window_for(trace, side, display.positions)  # read only the window's rows (issue 23: long inputs)
    hidden = read_rows(trace, hidden_name, window)  # [T, d_ff]
    out = read_rows(trace, out_name, window)  # [T, d]
    total = window.total if window is not None else hidden.shape[0]
    first = first_of(window)  # the position of the first row
    labels = window_labels(row_labels(trace, side, total, vocab), window)  # decoder rows: "<s> → le"
    activation = run_activation(trace, hidden)
    gate_name, up_name = names.ffn_entry(layer, "gate"), names.ffn_entry(layer, "up")
    gated = gate_name in trace and up_name in trace
    zeros = hidden == 0.0  # [T, d_ff]
    hatch = activation == "relu" and bool(zeros.any())  # hatched zeros only where ReLU really cuts to 0
    d_ff = hidden.shape[1]
    hidden_title = f"{ACTIVATION_WORDS[activation]}(gate) ⊙ up" if gated else f"hidden units (d_ff = {d_ff})"
    shape = "gate it, multiply by the up projection" if gated else "apply the non-linearity"
    return FFNView(
        activation=activation,
        summary=activation_summary(activation, hidden, gated)
        + ("" if window is None or window.whole else f" · {window.caption()}"),
        hidden=matrix_view(
            hidden_name,
            hidden,
            labels,
            hidden_title,
            masked=zeros if hatch else None,
            symmetric=True if activation != "relu" else None,
            first_row=first_of(window),
        ),
        out=matrix_view(out_name, out, labels, f"{words.word('ffn.short')} output", first_row=first),
        gate=matrix_view(gate_name, read_rows(trace, gate_name, window), labels, "gate: x W_gate", first_row=first)
        if gated
        else None,
        up=matrix_view(up_name, read_rows(trace, up_name, window), labels, "up: x W_up", first_row=first)
        if gated
        else None,
        zeros=zeros,
        zero_share=zero_share(hidden),
        note=(
            f"{layer_name(layer)}: every token goes through the same network on its own — "
            f"widen to d_ff = {d_ff}, {shape}, shrink back to d_model = {out.shape[1]}. "
            "No information moves between tokens here."
        ),
        tokens=labels,
    )
