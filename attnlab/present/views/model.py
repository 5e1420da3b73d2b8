"""The plain data a stage panel draws: matrices with their axis labels and colour scale, bars, titles and notes.

Built by the view-model functions of this package from (trace, stage, display settings); Qt-free, so tests
check them without a window and the widgets only draw them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from attnlab.present.views.long_map import MapSource


@dataclass(frozen=True)
class MatrixView:
    """One heatmap: `matrix` [rows, cols] float32 C-contiguous, drawn under `title`.

    `symmetric`: True centres the colours on 0 (signed values), None lets the widget decide from the data.
    `masked`: bool [rows, cols], True where a cell is hatched instead of coloured (ReLU zeros, blocked keys).
    `message`: when not empty, the matrix is missing from the run and this sentence says why."""

    name: str  # the trace entry, e.g. "enc.0.norm1.out"
    matrix: np.ndarray
    rows: list[str] | None
    cols: list[str] | None
    title: str
    symmetric: bool | None = True
    masked: np.ndarray | None = None
    levels: tuple[float, float] | None = None
    message: str = ""
    axes: tuple[str, str] | None = None  # (rows' title, columns' title); None: the widget's own
    # a long map (present/views/long_map.py): read in pieces by the widget; `matrix` is then its overview
    source: MapSource | None = None
    # long inputs: the position of the first row / column when a window of positions is shown
    first_row: int = 0
    first_col: int = 0
    scale_label: str = ""  # the colour bar's name for a scale that is not the values' own (weight_scale.py)
    # a conversation's turns, marked along both axes: (role, first position, last + 1) (present/chat_marks.py)
    spans: tuple[tuple[str, int, int], ...] = ()


def matrix_view(
    name: str,
    values: np.ndarray,
    rows: list[str] | None,
    title: str,
    *,
    cols: list[str] | None = None,
    symmetric: bool | None = True,
    masked: np.ndarray | None = None,
    levels: tuple[float, float] | None = None,
    axes: tuple[str, str] | None = None,
    first_row: int = 0,
    first_col: int = 0,
) -> MatrixView:
    """A MatrixView over `values` as float32, C-contiguous (no copy when it already is)."""
    matrix = np.ascontiguousarray(values, dtype=np.float32)
    return MatrixView(
        name, matrix, rows, cols, title, symmetric, masked, levels, axes=axes, first_row=first_row, first_col=first_col
    )


def missing_matrix(name: str, title: str, message: str) -> MatrixView:
    """The placeholder of a matrix the run did not record: an empty matrix and the sentence that says why."""
    return MatrixView(name, np.zeros((0, 0), dtype=np.float32), None, None, title, message=message)


@dataclass(frozen=True)
class Note:
    """A sentence under or over a picture, with the other texts a toggle may switch it to (the widget reserves
    room for the tallest, so a toggle moves nothing)."""

    text: str
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class MessageView:
    """A stage the run cannot show (entries not recorded, no run options): one sentence instead of pictures."""

    kind: str
    message: str


@dataclass(frozen=True)
class BarSeries:
    """Bars at x = 0..n-1 (one per token), e.g. the per-token mean before the norm."""

    label: str
    values: np.ndarray  # [T] float32


@dataclass(frozen=True)
class BarsView:
    """A bar chart of one statistic per token, before and after a step."""

    title: str
    series: tuple[BarSeries, ...]
