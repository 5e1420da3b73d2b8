"""DeBERTa's score terms as plain data: one term map (c2c, c2p or p2c) of the chosen head, and for a position
term the map of δ, the row of the relative table each cell reads. Qt-free; ui/stages/disentangled.py draws it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present import relative_key
from attnlab.present.disentangled import TITLES as DEBERTA_TITLES
from attnlab.present.facts import array
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view
from attnlab.present.views.site import SiteView

CELL = {
    "c2c": "cell (i, j) = Qcᵢ · Kcⱼ",
    "c2p": "cell (i, j) = Qcᵢ · Kr[δ(i, j)]",
    "p2c": "cell (i, j) = Kcⱼ · Qr[δ(i, j)]",
}
TITLES = {**DEBERTA_TITLES, **relative_key.TITLES}  # BERT relative_key's terms share the view
CELL.update(relative_key.CELL)
POSITIONS_OFF = "The positions are switched off in this run: there is no {term} term, only content → content."


@dataclass(frozen=True)
class TermView:
    """One term [Tq, Tk] of the chosen head; `rows` [Tq, Tk] (δ, the table row each cell reads) for c2p and p2c,
    None for c2c."""

    kind: str
    heading: str  # the term, the site, the head
    matrix: MatrixView  # titled with what a cell is
    rows: MatrixView | None
    note: str
    head: int
    n_heads: int


def table_rows(trace: Trace, kind: str) -> np.ndarray:
    """δ of each cell [Tq, Tk] as the engine gathered it: clamp(±distance + k, 0, 2k − 1), c2p from the query's
    side (i − j), p2c from the key's (j − i), read off the recorded bucketed distance i − j."""
    k = trace.config.rel_span
    distance = array(trace, names.rel_entry("enc", "distance")).astype(np.int64)  # [T, T]: bucket(i - j)
    rows = distance if kind == "c2p" else -distance.T  # p2c: key j's distance to query i
    return np.clip(rows + k, 0, 2 * k - 1)  # [Tq, Tk]


def rows_of(trace: Trace, kind: str) -> np.ndarray:
    """δ [Tq, Tk]: DeBERTa's clamped, bucketed row, or BERT relative_key's i − j + M − 1."""
    return relative_key.table_rows(trace) if kind in relative_key.TERMS else table_rows(trace, kind)


def term_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> TermView | MessageView:
    site, kind = stage.site or "", stage.kind
    name = names.site_entry(site, kind)
    if name not in trace:
        if kind in relative_key.TERMS and not trace.options.positional:
            return MessageView(kind, f"The positions are switched off in this run: there is no {TITLES[kind]} term.")
        if kind != "c2c" and not trace.options.positional:
            return MessageView(kind, POSITIONS_OFF.format(term=TITLES[kind]))
        return MessageView(kind, f"This run did not record {name}.")
    sv = SiteView(trace, site, display, vocab)
    matrix = array(trace, name)[sv.head]  # [Tq, Tk]
    heading = f"{TITLES[kind]} · {sv.name} · {sv.head_text}"
    shown = matrix_view(
        name, matrix, sv.rows, CELL[kind], cols=sv.cols, symmetric=True, axes=(sv.query_axis, sv.key_axis)
    )
    rows = None
    if kind != "c2c":
        rows = matrix_view(
            names.rel_entry("enc", "distance"),
            rows_of(trace, kind).astype(np.float32),
            sv.rows,
            "δ: the row of R each cell reads",
            cols=sv.cols,
            symmetric=None,
            axes=(sv.query_axis, sv.key_axis),
        )
    spread = f"Values range from {matrix.min():.2f} to {matrix.max():.2f}." if matrix.size else ""
    note = f"{spread} Added, cell by cell, into the score with the other terms; divided by the scale after."
    return TermView(kind, heading, shown, rows, note, sv.head, sv.n_heads)
