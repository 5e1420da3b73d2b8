"""The positional-encoding stage as plain data: the table [positions × d_model], a few dimensions as curves over
the positions (the exact sinusoid between the tokens, or the learned values), and the sentences — or, when
nothing is added, the sentence that says why (switched off, rotary, or none)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.positional import sinusoidal_period
from attnlab.engine.trace import Trace
from attnlab.present.facts import tokens
from attnlab.present.position_range import first_of, read_rows, window_for, window_labels
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view

CURVE_SAMPLES = 12  # points per position step on a sinusoid's curve
SINUSOID_NOTE = (
    "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same angle). "
    "Low dimensions swing fast, high ones slowly: together they give every "
    "position its own pattern. Dots mark the token positions."
)
LEARNED_NOTE = (
    "This model learned its position table during training: one trained "
    "vector per position. Dots mark the token positions."
)
SWITCHED_OFF = (
    "Positional encoding is switched off for this run: nothing is added to the token embeddings, "
    "so the first layer sees the embeddings alone. Without position the model sees the tokens as "
    "an unordered bag: 'dog bites man' and 'man bites dog' give each word the same encoding. "
    "Tick 'Positional encoding' to add it again."
)
NONE_ADDED = (
    "No positional encoding is added in this run: this model has none, or it uses rotary "
    "encoding (which rotates Q and K inside attention instead of adding a table here). Without "
    "position, the model sees the tokens as an unordered bag."
)


def sinusoid_values(positions: np.ndarray, dim: int, d_model: int) -> np.ndarray:
    """PE[pos, dim] of the sinusoidal encoding at (possibly fractional) positions."""
    angle = positions / 10000.0 ** ((dim - dim % 2) / d_model)
    return np.sin(angle) if dim % 2 == 0 else np.cos(angle)


def is_sinusoidal(pe: np.ndarray, first: int = 0) -> bool:
    """True when the recorded table [T, d] (its rows positions first, first + 1, …) is the fixed sine/cosine
    encoding (not a learned one)."""
    t, d = pe.shape
    pos = np.arange(first, first + t, dtype=np.float64)[:, None]
    expected = np.stack([sinusoid_values(pos[:, 0], j, d) for j in range(d)], axis=1)  # [T, d]
    return bool(np.allclose(pe, expected, atol=1e-4))


@dataclass(frozen=True)
class PECurve:
    """One model dimension over the positions: the line (`xs`, `ys`) and the dots at the tokens (`values`)."""

    dim: int
    xs: np.ndarray  # [n] float64: fine positions for a sinusoid, the token positions for a learned table
    ys: np.ndarray  # [n]
    values: np.ndarray  # [T] the recorded PE[:, dim]
    legend: str  # "dim 0 (sin, period 6.28)" or "dim 0"


@dataclass(frozen=True)
class PositionalView:
    matrix: MatrixView  # [T, d]
    encoding: str  # "sinusoidal" or "learned"
    curves: tuple[PECurve, ...]
    labels: list[str] | None  # token labels along the curves' x axis
    note: str
    first: int = 0  # long inputs: the position of the first row (a window of positions; x = position - first)

    kind = "pos"

    @property
    def sinusoidal(self) -> bool:
        return self.encoding == "sinusoidal"

    @property
    def dims(self) -> list[int]:
        return [curve.dim for curve in self.curves]

    @property
    def positions(self) -> int:
        return int(self.matrix.matrix.shape[0])


def pe_curve(pe: np.ndarray, dim: int, sinusoidal: bool, first: int = 0) -> PECurve:
    """Dimension `dim` of the table's rows (positions first, first + 1, …) over x = position - first."""
    t, d = pe.shape
    positions = np.arange(t, dtype=np.float64)  # [T]
    values = pe[:, dim]  # [T]
    if not sinusoidal:
        return PECurve(dim, positions, values, values, f"dim {dim}")
    fine = np.linspace(0.0, max(t - 1, 0), max(2, (t - 1) * CURVE_SAMPLES + 1))  # [n]
    wave = "sin" if dim % 2 == 0 else "cos"
    legend = f"dim {dim} ({wave}, period {sinusoidal_period(dim, d):.3g})"
    return PECurve(dim, fine, sinusoid_values(fine + first, dim, d), values, legend)


def positional_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> PositionalView | MessageView:
    side = stage.side or "src"
    name = names.side_entry(side, "pos")
    if name not in trace:
        switched_off = trace.config.adds_position_table and not trace.options.positional
        return MessageView("pos", SWITCHED_OFF if switched_off else NONE_ADDED)
    window = window_for(trace, side, display.positions)  # read only the window's rows (issue 23: long inputs)
    pe = read_rows(trace, name, window)  # [T, d]
    first, d = first_of(window), pe.shape[1]
    t = window.total if window is not None else pe.shape[0]
    labels = tokens(trace, side, t)
    sinusoidal = is_sinusoidal(pe, first)
    encoding = "sinusoidal" if sinusoidal else "learned"
    title = f"{encoding} positional encoding · {t} positions × {d} dimensions"
    if window is not None and not window.whole:
        title += f" · {window.caption()}"
    dims = [j for j in dict.fromkeys(display.pe_dims) if 0 <= j < d]
    return PositionalView(
        matrix=matrix_view(name, pe, window_labels(labels, window), title, first_row=first),
        encoding=encoding,
        curves=tuple(pe_curve(pe, dim, sinusoidal, first) for dim in dims),
        labels=labels[window.rows] if labels is not None and window is not None else labels,
        note=SINUSOID_NOTE if sinusoidal else LEARNED_NOTE,
        first=first,
    )
