"""ComparePanel: the current stage in two runs, A (pinned) and B (current), as A | B or A | B | B − A.

A and B share one colour scale (present/compare.shared_range); B − A has a diverging scale centred on 0
(symmetric_range). Where the shapes differ the difference is replaced by the reason (present/compare.py).
The output steps show A's and B's bars side by side for the tokens either run ranks in its top k, and B − A
per token; the all-heads stage shows three grids. Stages whose own picture has no A | B form (token lines,
the ÷√dₖ histograms, LayerNorm vs BatchNorm) say on the panel what is compared instead (compare.FORM_NOTES).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.present import compare, words
from attnlab.present.ablation import distribution_change
from attnlab.present.patching import patched_answer_line
from attnlab.present.stages import Stage, ViewState
from attnlab.present.window_facts import OUTPUT_KINDS, token_text
from attnlab.ui.plots.colormaps import DEFAULT_DIVERGING
from attnlab.ui.plots.head_grid import HeadGrid
from attnlab.ui.plots.heatmap import LabeledHeatmap, elide_label
from attnlab.ui.plots.patch_gestures import PatchGestures
from attnlab.ui.plots.raster import rect_updates
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import Note

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

A_COLOR, B_COLOR = "#9aa5b1", "#3b7dd8"
DIFF_COLORS = ("#d8453b", "#3b6fd8")  # B − A per token: larger in B (red), smaller in B (blue)
MAX_ROWS = 3  # entries drawn at once (Q, K, V); a stage with more gets a chooser


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
        self.gestures = PatchGestures(self.a, self.b)  # drag A's cell onto B, or B's menu: patch from A

    def show_entry(self, entry: compare.ComparedEntry, a: Trace, b: Trace, view: ViewState) -> None:
        self.gestures.show(entry.name, view.head)
        per_head = any(compare.heads_of(t, entry.name) is not None for t in (a, b))
        self.title.setText(f"<b>{entry.name}</b>" + (f" · {words.head_words(view.head)}" if per_head else ""))
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


class _GridRow(QtWidgets.QWidget):
    """The all-heads stage: A, B and B − A as three grids of every head (or the reason there is no B − A)."""

    def __init__(self, parent: QtWidgets.QWidget):
        super().__init__(parent)
        self.a, self.b = HeadGrid(self), HeadGrid(self)
        self.diff = HeadGrid(self, colormap=DEFAULT_DIVERGING, signed_colormap=DEFAULT_DIVERGING)
        self.diff.set_value_role("change in weight")
        self.message = QtWidgets.QLabel(self, wordWrap=True, alignment=Qt.AlignmentFlag.AlignCenter)
        grid = self._grid = QtWidgets.QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        for column, view in enumerate((self.a, self.b, self.diff)):
            grid.addWidget(view, 0, column)
            grid.setColumnStretch(column, 1)
        grid.addWidget(self.message, 0, 2)

    def show_entry(self, entry: compare.ComparedEntry, a: Trace, b: Trace, view: ViewState) -> None:
        levels = compare.shared_range(entry.a, entry.b)
        for label, grid, weights, trace in (("A", self.a, entry.a, a), ("B", self.b, entry.b, b)):
            grid.set_colormap(view.colormap)
            if weights is None:
                grid.clear(entry.message)
                continue
            rows, cols = compare.axis_labels(trace, entry.name, weights.shape[1:])
            grid.set_heads(weights, rows, cols, title=label, levels=levels)
        show_diff = view.compare == "diff"
        self._grid.setColumnStretch(2, 1 if show_diff else 0)
        self.diff.setVisible(show_diff and entry.difference is not None)
        self.message.setVisible(show_diff and entry.difference is None)
        self.message.setText(entry.message)
        if show_diff and entry.difference is not None:
            rows, cols = compare.axis_labels(b, entry.name, entry.difference.shape[1:])
            levels = compare.symmetric_range(entry.difference)
            self.diff.set_heads(entry.difference, rows, cols, title="B − A", levels=levels, symmetric=True)


def _bar_plot(parent: QtWidgets.QWidget) -> pg.PlotWidget:
    plot = rect_updates(pg.PlotWidget(parent))
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(x=False, y=False)
    plot.getPlotItem().getViewBox().invertY(True)
    return plot


class ComparePanel(StagePanel):
    """Not in the stage registry: the main window shows it instead of the stage's panel while a run is
    pinned and ViewState.compare is not "off". Every entry the stage's own panel draws is compared (a chooser
    picks one when there are more than MAX_ROWS); the all-heads grid and the output bars keep their form."""

    patchAsked = Signal(str, str, object, object)  # entry, part, head, position: patch it from A (patch_gestures)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("comparePanel")
        self._caption = Note(self, bold=True)
        self._chooser = QtWidgets.QComboBox(self)
        self._chooser.setObjectName("compareEntryChooser")
        self._chooser.setToolTip("Which of this stage's entries A | B compares")
        self._chooser.activated.connect(self._entry_chosen)
        self._chosen: str | None = None  # the entry the chooser picked (kept while the stage has it)
        self._rows_box = QtWidgets.QVBoxLayout()
        self._rows: list[_EntryRow] = []
        self._grids = _GridRow(self)
        self._bars = _bar_plot(self)
        self._bars.addLegend(offset=(-10, 10))
        self._bar_a = pg.BarGraphItem(x0=[], y=[], width=[], height=0.36, brush=A_COLOR, name="A (pinned)")
        self._bar_b = pg.BarGraphItem(x0=[], y=[], width=[], height=0.36, brush=B_COLOR, name="B (current)")
        self._bars.addItem(self._bar_a)
        self._bars.addItem(self._bar_b)
        self._diff_bars = _bar_plot(self)
        self._diff_bars.setTitle("B − A")
        self._bar_diff = pg.BarGraphItem(x0=[], y=[], width=[], height=0.6, brush=DIFF_COLORS[0])
        self._diff_bars.addItem(self._bar_diff)
        self._note = Note(self)
        self._rows_part = QtWidgets.QWidget(self)  # the matrix rows: hidden as a whole, so it takes no room
        self._rows_part.setLayout(self._rows_box)
        self._rows_box.setContentsMargins(0, 0, 0, 0)
        self._bars_part = QtWidgets.QWidget(self)
        bars = QtWidgets.QHBoxLayout(self._bars_part)
        bars.setContentsMargins(0, 0, 0, 0)
        bars.addWidget(self._bars, 2)
        bars.addWidget(self._diff_bars, 1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._caption)
        layout.addWidget(self._chooser)
        for part in (self._rows_part, self._grids, self._bars_part):
            layout.addWidget(part, 1)
        layout.addWidget(self._note)
        self._data: dict[str, Any] = {}  # what the panel shows, for tests (shown_data)
        self._vocab: Callable[[int], str] | None = None
        self._last: tuple[Trace, Trace, Stage, ViewState] | None = None
        self.unpatched: Trace | None = None  # run B before its patches (Session.unpatched), for the answer's line

    def set_vocabulary(self, vocab: Callable[[int], str] | None) -> None:
        """Token names for output ids (the main window passes the model's tokenizer.id_to_token)."""
        self._vocab = vocab

    def _name(self, trace: Trace, token_id: int) -> str:
        return self._vocab(token_id) if self._vocab is not None else token_text(trace, token_id)

    def _row(self, i: int) -> _EntryRow:
        while len(self._rows) <= i:
            self._rows.append(_EntryRow(self))
            self._rows[-1].gestures.asked.connect(self.patchAsked)
            self._rows_box.addWidget(self._rows[-1], 1)
        return self._rows[i]

    def _show_only(self, part: str) -> None:
        """Show the rows, the grids or the bars; hide the others."""
        self._rows_part.setVisible(part == "rows")
        self._grids.setVisible(part == "grids")
        self._bars_part.setVisible(part == "bars")
        if part != "rows":
            self._chooser.setVisible(False)

    def show_pair(self, a: Trace, b: Trace, stage: Stage, view: ViewState) -> None:
        self._last = (a, b, stage, view)
        self._caption.show_text(f"A (pinned): {compare.describe_run(a)}    B (now): {compare.describe_run(b)}")
        if stage.kind in OUTPUT_KINDS:
            self._show_only("bars")
            self._show_bars(a, b, stage.kind, view)
            return
        if stage.kind == "heads" and stage.site:
            self._show_only("grids")
            entry = compare.compare_heads(a, b, stage.site)
            self._grids.show_entry(entry, a, b, view)
            self._show_note([entry], view, "")
            self._data = {"mode": view.compare, "entries": [entry], "form": "grids"}
            return
        self._show_only("rows")
        entries = compare.compare_stage(a, b, stage, view.head)
        shown = self._choose(entries)
        for i, row in enumerate(self._rows):
            row.setVisible(i < len(shown))
        for i, entry in enumerate(shown):
            row = self._row(i)
            row.setVisible(True)
            row.show_entry(entry, a, b, view)
        self._show_note(shown, view, compare.FORM_NOTES.get(stage.kind, ""))
        self._data = {"mode": view.compare, "entries": shown, "all_entries": entries, "form": "matrices"}

    def _choose(self, entries: list[compare.ComparedEntry]) -> list[compare.ComparedEntry]:
        """All entries when they fit; else the chooser's one (the first until one is picked)."""
        many = len(entries) > MAX_ROWS
        self._chooser.setVisible(many)
        if not many:
            return entries
        names_ = [e.name for e in entries]
        if [self._chooser.itemText(i) for i in range(self._chooser.count())] != names_:
            self._chooser.clear()
            self._chooser.addItems(names_)
        index = names_.index(self._chosen) if self._chosen in names_ else 0
        self._chooser.setCurrentIndex(index)
        return [entries[index]]

    def _entry_chosen(self, index: int) -> None:
        self._chosen = self._chooser.itemText(index)
        if self._last is not None:
            self.show_pair(*self._last)

    def _show_note(self, entries: list[compare.ComparedEntry], view: ViewState, form: str) -> None:
        messages = [e.message for e in entries if e.message]
        scales = (
            "A and B share one colour scale; B − A is drawn on a diverging scale centred on 0 (red: B is "
            "larger, blue: B is smaller)."
            if view.compare == "diff"
            else "A and B share one colour scale."
        )
        self._note.show_text(" ".join([form, *messages] if messages else [form, scales]).strip())

    def _show_bars(self, a: Trace, b: Trace, kind: str, view: ViewState) -> None:
        ta, tb = (t[kind].float().numpy() for t in (a, b))  # [T, V] each
        if ta.shape[1] != tb.shape[1]:
            self._note.show_text(
                f"A has {ta.shape[1]} vocabulary entries and B {tb.shape[1]}: the two models do "
                "not share an output vocabulary, so their bars cannot be paired."
            )
            self._data = {"mode": view.compare, "entries": [], "form": "bars"}
            return
        pos_a, pos_b = (_position(t.shape[0], view.position) for t in (ta, tb))
        change = distribution_change(ta[pos_a], tb[pos_b], view.top_k)
        difference = change.after - change.before  # [k]: B − A of each token shown
        y = np.arange(len(change.ids), dtype=float)
        self._bar_a.setOpts(x0=np.minimum(change.before, 0), y=y - 0.19, width=np.abs(change.before), height=0.36)
        self._bar_b.setOpts(x0=np.minimum(change.after, 0), y=y + 0.19, width=np.abs(change.after), height=0.36)
        brushes = [DIFF_COLORS[bool(d < 0)] for d in difference]  # red: B is larger, blue: B is smaller
        self._bar_diff.setOpts(x0=np.minimum(difference, 0), y=y, width=np.abs(difference), height=0.6, brushes=brushes)
        labels = [self._name(b, i) for i in change.ids]
        ticks = [[(i, elide_label(s, 14)) for i, s in enumerate(labels)]]
        for plot in (self._bars, self._diff_bars):
            plot.getPlotItem().getAxis("left").setTicks(ticks)
            plot.setYRange(-0.6, max(len(labels), 1) - 0.4, padding=0)
        self._diff_bars.setVisible(view.compare == "diff")
        flip = (
            f"The most likely token flips from “{self._name(a, change.flipped[0])}” (A) to "
            f"“{self._name(b, change.flipped[1])}” (B)."
            if change.flipped
            else f"Both runs rank “{labels[0]}” first."
        )
        diff = " Right: B − A per token (red: B is larger, blue: B is smaller)." if view.compare == "diff" else ""
        patched = patched_answer_line(a, b, self.unpatched, self._vocab)  # issue 37: the answer's logit difference
        self._note.show_text(
            f"{kind} at position {pos_b} (A: {pos_a}): grey bars A, blue bars B.{diff} {flip} {patched}"
        )
        self._data = {
            "mode": view.compare,
            "form": "bars",
            "ids": change.ids,
            "a": change.before,
            "b": change.after,
            "difference": difference,
            "positions": (pos_a, pos_b),
            "flipped": change.flipped,
        }

    def shown_data(self) -> dict[str, Any]:
        return dict(self._data)


def _position(n_positions: int, requested: int) -> int:
    return min(max(int(requested), -n_positions), n_positions - 1) % n_positions
