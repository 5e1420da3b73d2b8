"""ComparePanel: the current stage in two runs, A (pinned) and B (current), as A | B or A | B | B − A.

A and B share one colour scale (present/compare.shared_range); B − A has a diverging scale centred on 0
(symmetric_range). Where the shapes differ the difference is replaced by the reason (present/compare.py).
The output steps show A's and B's bars side by side for the tokens either run ranks in its top k.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present import compare
from attnlab.present.ablation import distribution_change
from attnlab.present.stages import Stage, ViewState
from attnlab.ui.colormaps import DEFAULT_DIVERGING
from attnlab.ui.heatmap import LabeledHeatmap, elide_label
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note

A_COLOR, B_COLOR = "#9aa5b1", "#3b7dd8"
MAX_ROWS = 3  # entries a stage shows at most (Q, K, V)


class _EntryRow(QtWidgets.QWidget):
    """One entry: its name, then A, B and B − A heatmaps (or the reason there is no difference)."""

    def __init__(self, parent: QtWidgets.QWidget):
        super().__init__(parent)
        self.title = QtWidgets.QLabel(self)
        self.a, self.b = LabeledHeatmap(self), LabeledHeatmap(self)
        self.diff = LabeledHeatmap(self, colormap=DEFAULT_DIVERGING, signed_colormap=DEFAULT_DIVERGING)
        self.message = QtWidgets.QLabel(self, wordWrap=True, alignment=Qt.AlignmentFlag.AlignCenter)
        grid = self._grid = QtWidgets.QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.title, 0, 0, 1, 3)
        for column, view in enumerate((self.a, self.b, self.diff)):
            grid.addWidget(view, 1, column)
            grid.setColumnStretch(column, 1)
        grid.addWidget(self.message, 1, 2)
        grid.setRowStretch(1, 1)

    def show_entry(self, entry: compare.ComparedEntry, a: Trace, b: Trace, view: ViewState) -> None:
        per_head = any(compare.heads_of(t, entry.name) is not None for t in (a, b))
        self.title.setText(f"<b>{entry.name}</b>" + (f" · {names.head_words(view.head)}" if per_head else ""))
        levels = compare.shared_range(entry.a, entry.b)
        for label, heatmap, matrix, trace in (("A", self.a, entry.a, a), ("B", self.b, entry.b, b)):
            heatmap.set_colormap(view.colormap)
            if matrix is None:
                heatmap.clear(entry.message)
                continue
            rows, cols = compare.axis_labels(trace, entry.name, matrix.shape)
            heatmap.set_data(matrix, rows, cols, title=label, levels=levels)
        show_diff = view.compare == "diff"
        self._grid.setColumnStretch(2, 1 if show_diff else 0)
        self.diff.setVisible(show_diff and entry.difference is not None)
        self.message.setVisible(show_diff and entry.difference is None)
        self.message.setText(entry.message)
        if show_diff and entry.difference is not None:
            rows, cols = compare.axis_labels(b, entry.name, entry.difference.shape)
            self.diff.set_data(
                entry.difference,
                rows,
                cols,
                title="B − A",
                levels=compare.symmetric_range(entry.difference),
                symmetric=True,
            )


class ComparePanel(StagePanel):
    """Not in the stage registry: the main window shows it instead of the stage's panel while a run is
    pinned and ViewState.compare is not "off"."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("comparePanel")
        self._caption = Note(self, bold=True)
        self._rows = [_EntryRow(self) for _ in range(MAX_ROWS)]
        self._bars = pg.PlotWidget(self)
        self._bars.setMenuEnabled(False)
        self._bars.setMouseEnabled(x=False, y=False)
        self._bars.getPlotItem().getViewBox().invertY(True)
        self._bars.addLegend(offset=(-10, 10))
        self._bar_a = pg.BarGraphItem(x0=[], y=[], width=[], height=0.36, brush=A_COLOR, name="A (pinned)")
        self._bar_b = pg.BarGraphItem(x0=[], y=[], width=[], height=0.36, brush=B_COLOR, name="B (current)")
        self._bars.addItem(self._bar_a)
        self._bars.addItem(self._bar_b)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._caption)
        for row in self._rows:
            layout.addWidget(row, 1)
        layout.addWidget(self._bars, 1)
        layout.addWidget(self._note)
        self._data: dict = {}
        self._vocab: Callable[[int], str] | None = None

    def set_vocabulary(self, vocab: Callable[[int], str] | None) -> None:
        """Token names for output ids (the main window passes the model's tokenizer.id_to_token)."""
        self._vocab = vocab

    def _name(self, trace: Trace, token_id: int) -> str:
        return self._vocab(token_id) if self._vocab is not None else _token_name(trace, token_id)

    def show_pair(self, a: Trace, b: Trace, stage: Stage, view: ViewState) -> None:
        self._caption.show_text(f"A (pinned): {compare.describe_run(a)}    B (now): {compare.describe_run(b)}")
        if stage.kind in (names.LOGITS, names.PROBS):
            self._show_bars(a, b, stage.kind, view)
            return
        entries = compare.compare_stage(a, b, stage, view.head)[:MAX_ROWS]
        self._bars.setVisible(False)
        for i, row in enumerate(self._rows):
            row.setVisible(i < len(entries))
            if i < len(entries):
                row.show_entry(entries[i], a, b, view)
        messages = [e.message for e in entries if e.message]
        scales = (
            "A and B share one colour scale; B − A is drawn on a diverging scale centred on 0 (red: B is "
            "larger, blue: B is smaller)."
            if view.compare == "diff"
            else "A and B share one colour scale."
        )
        self._note.show_text(" ".join(messages) if messages else scales)
        self._data = {"mode": view.compare, "entries": entries}

    def _show_bars(self, a: Trace, b: Trace, kind: str, view: ViewState) -> None:
        for row in self._rows:
            row.setVisible(False)
        self._bars.setVisible(True)
        ta, tb = (t[kind].float().numpy() for t in (a, b))  # [T, V] each
        if ta.shape[1] != tb.shape[1]:
            self._note.show_text(
                f"A has {ta.shape[1]} vocabulary entries and B {tb.shape[1]}: the two models do "
                "not share an output vocabulary, so their bars cannot be paired."
            )
            self._data = {"mode": view.compare, "entries": []}
            return
        pos_a, pos_b = (_position(t.shape[0], view.position) for t in (ta, tb))
        change = distribution_change(ta[pos_a], tb[pos_b], view.top_k)
        y = np.arange(len(change.ids), dtype=float)
        self._bar_a.setOpts(x0=np.minimum(change.before, 0), y=y - 0.19, width=np.abs(change.before), height=0.36)
        self._bar_b.setOpts(x0=np.minimum(change.after, 0), y=y + 0.19, width=np.abs(change.after), height=0.36)
        labels = [self._name(b, i) for i in change.ids]
        self._bars.getPlotItem().getAxis("left").setTicks([[(i, elide_label(s, 14)) for i, s in enumerate(labels)]])
        self._bars.setYRange(-0.6, max(len(labels), 1) - 0.4, padding=0)
        flip = (
            f"The most likely token flips from “{self._name(a, change.flipped[0])}” (A) to "
            f"“{self._name(b, change.flipped[1])}” (B)."
            if change.flipped
            else f"Both runs rank “{labels[0]}” first."
        )
        self._note.show_text(f"{kind} at position {pos_b} (A: {pos_a}): grey bars A, blue bars B. {flip}")
        self._data = {
            "mode": view.compare,
            "ids": change.ids,
            "a": change.before,
            "b": change.after,
            "flipped": change.flipped,
        }

    def shown_data(self) -> dict:
        return dict(self._data)


def _position(n_positions: int, requested: int) -> int:
    return min(max(int(requested), -n_positions), n_positions - 1) % n_positions


def _token_name(trace: Trace, token_id: int) -> str:
    """A token's text from the run's own tokens, else '#id' (the panel has no tokenizer)."""
    for side in names.SIDES:
        ids, tokens = trace.get(names.side_entry(side, "ids")), trace.get(names.side_entry(side, "tokens"))
        if ids is not None and tokens:
            for i, t in zip(ids.tolist(), tokens, strict=False):
                if i == token_id:
                    return str(t)
    return f"#{token_id}"
