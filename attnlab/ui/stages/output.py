"""The output: top-k logits or next-token probabilities at one position as horizontal bars."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import Signal

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.output_bars import OutputView
from attnlab.ui.plots.axes import grid_axes, quiet_hidden_axes, show_grid_behind
from attnlab.ui.plots.bars import SolidBars
from attnlab.ui.plots.heatmap import cache_axis, elide_label, tick_font
from attnlab.ui.plots.raster import rect_updates
from attnlab.ui.plots.value_labels import ValueLabel, ValueLabels
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    foreground_color,
    note_font,
)
from attnlab.ui.stages.output_sampling import CutMarks, SampleChart

BAR_COLOR = "#3b7dd8"
TOP_COLOR = "#ff9f1c"
INSIDE_FROM = 0.55  # a value label goes inside its bar when the bar reaches past this share of the axis
FIXED_RANGE = (-0.02, 1.02)  # the probability axis with "fixed 0–1 axis" on


class OutputPanel(StagePanel):
    """Raw logits (kind "logits") or softmax probabilities (kind "probs") of the top-k tokens.

    Token names: the trace holds ids only, so the host may call `set_vocabulary(id_to_token)`; otherwise
    names come from the tokens seen in this run and the specials, and other ids show as "#id".
    The temperature is the one the run used (the view-model's `temperature`).
    """

    positionChosen = Signal(int)  # the person picked the position whose distribution is shown (-1 = last)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = Note(self, delta=2, bold=True)
        self.fixed_axis = QtWidgets.QCheckBox("Fixed 0–1 axis")
        self.fixed_axis.setObjectName("outputFixedAxis")
        self.fixed_axis.setToolTip(
            "Keep the probability axis at 0…1, so a temperature change shows the distribution flattening or sharpening"
        )
        self.fixed_axis.toggled.connect(self._redraw)
        self.position_combo = QtWidgets.QComboBox()
        self.position_combo.setObjectName("outputPosition")
        self.position_combo.setToolTip("Which position's next-token distribution is shown")
        self.position_combo.activated.connect(self._position_picked)
        self._positions_key: tuple | None = None
        self._last_args: tuple | None = None
        self._data_inside: list[bool] = []
        controls = QtWidgets.QHBoxLayout()
        controls.addWidget(QtWidgets.QLabel("Position:"))
        controls.addWidget(self.position_combo)
        controls.addSpacing(16)
        controls.addWidget(self.fixed_axis)
        controls.addStretch(1)
        self._samples = SampleChart(self)  # "Sample 20 times" (issue 35)
        controls.addWidget(self._samples.button)
        self._plot = pg.PlotWidget(self, axisItems=grid_axes())
        rect_updates(self._plot)
        self._plot.setMenuEnabled(False)
        self._plot.setMouseEnabled(x=False, y=False)
        self._plot.hideButtons()
        item = self._plot.getPlotItem()
        item.getViewBox().invertY(True)
        show_grid_behind(item, x=True, alpha=0.15)
        quiet_hidden_axes(item)
        left = item.getAxis("left")
        font = tick_font()
        font.setPointSizeF(font.pointSizeF() + 2)
        left.setTickFont(font)
        item.getAxis("bottom").setTickFont(tick_font())
        item.getAxis("bottom").enableAutoSIPrefix(False)
        for axis in ("left", "bottom"):
            cache_axis(item.getAxis(axis))
        self._x_range: tuple[float, float] | None = None
        # what the probability axis was last chosen for: (stage, kind, position, ids) and the temperature then
        self._axis_for: tuple[tuple, float | None] | None = None
        # the top bar in orange, the others in blue: two one-colour items (bars.py)
        self._top_bar = SolidBars(TOP_COLOR, 0.72, horizontal=True)
        self._bars = SolidBars(BAR_COLOR, 0.72, horizontal=True)
        self._plot.addItem(self._bars)
        self._plot.addItem(self._top_bar)
        self._values = ValueLabels(note_font(), foreground_color().name())  # each bar's value, one item for all
        self._plot.addItem(self._values)
        self._cut = CutMarks(self._plot)  # the top-k / top-p cut when the run samples
        self._ticks_key: tuple | None = None
        self._note = Note(self)
        self._ablation = Note(self, bold=True)  # before → after when the run ablates heads
        self._ablation.setObjectName("ablationNote")
        self._stack = MessageStack(self._plot, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addLayout(controls)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._note)
        layout.addWidget(self._ablation)
        layout.addWidget(self._samples)
        self._data: dict = {}

    def set_vocabulary(self, vocab: Callable[[int], str] | Sequence[str] | None) -> None:
        """Token names for ids: a function id -> str (e.g. tokenizer.id_to_token) or a list."""
        if vocab is None or callable(vocab):
            self.vocab = vocab
        else:
            pieces = list(vocab)
            self.vocab = lambda i: pieces[i] if 0 <= i < len(pieces) else f"#{i}"
        self._ticks_key = None

    def show_view(self, shown: OutputView | MessageView, stage: Stage, view: ViewState) -> None:
        if isinstance(shown, MessageView):
            self._data = {"message": shown.message}
            self._stack.show_message(shown.message)
            self._samples.show_samples(None)
            return
        self._stack.show_content()
        self._last_args = (shown, stage, view)
        self._fill_positions(shown.positions, shown.position)
        self.fixed_axis.setEnabled(shown.probabilities)
        keep_axis = self._temperature_only((stage.key, shown), shown.temperature)
        self._draw_bars(shown.values, shown.probabilities, keep_axis)
        self._set_ticks(shown.labels)
        self._place_values(shown.values, shown.value_texts)
        self._title.show_text(shown.title)
        self._note.show_text(shown.note)
        self._data = {
            "kind": shown.kind,
            "position": shown.position,
            "ids": shown.ids,
            "labels": shown.labels,
            "values": shown.values,
            "argmax": shown.ids[0],
            "temperature": shown.temperature,
            "row": shown.row,
            "x_range": self._x_range,
            "fixed_axis": self.fixed_axis.isChecked(),
            "value_inside": list(self._data_inside),
        }
        self._ablation.show_text(shown.ablation)
        self._show_cut(shown)
        if shown.change is not None:
            self._data["ablation"] = shown.change

    def _show_cut(self, shown: OutputView) -> None:
        """The cut line, the probabilities before the cut and the draws' chart (all hidden while greedy)."""
        cut = shown.sampling
        self._cut.show(cut, shown.probabilities)
        self._samples.show_samples(cut.samples if cut is not None else None)
        if cut is not None:
            self._data.update(cut_at=self._cut.at, kept=list(cut.kept), raw=cut.raw, samples=cut.samples)

    def _temperature_only(self, shown: tuple[str, OutputView], temperature: float | None) -> bool:
        """Whether this distribution is the one the axis was chosen for, at another temperature: then the axis
        stays (it only widens for a taller bar), so T = 2 *looks* flatter than T = 0.5 (issue 32). Softmax with
        T > 0 keeps the order, so the same stage, position and top-k ids mean the same distribution."""
        key = (shown[0], shown[1].kind, shown[1].position, tuple(shown[1].ids))
        if self._axis_for is None or self._axis_for[0] != key or self._x_range is None:
            self._axis_for = (key, temperature)
            return False
        return temperature != self._axis_for[1]

    def _redraw(self) -> None:
        if self._last_args is not None:
            self._x_range = None
            self.show_view(*self._last_args)

    def _position_picked(self, index: int) -> None:
        last = self.position_combo.count() - 1
        self.positionChosen.emit(-1 if index == last else index)

    def _fill_positions(self, positions: list[str], position: int) -> None:
        """One entry per position: 'i: input → predicted' on the decoder side, else 'i: token'; the shown one
        current."""
        entries = tuple(positions)
        if entries != self._positions_key:
            self._positions_key = entries
            self.position_combo.blockSignals(True)
            self.position_combo.clear()
            self.position_combo.addItems([elide_label(e, 24) for e in entries])
            self.position_combo.blockSignals(False)
        self.position_combo.setCurrentIndex(position)

    def _place_values(self, values: np.ndarray, texts: list[str]) -> None:
        """Each bar's value, just right of the bar, or inside its end when a label there would leave the plot."""
        low, high = self._x_range or (0.0, 1.0)
        inside_from = low + INSIDE_FROM * (high - low)
        labels = []
        for i, (value, text) in enumerate(zip(values, texts, strict=True)):
            v = float(value)
            inside = v > inside_from
            labels.append(ValueLabel(max(v, 0.0), float(i), f"{text} " if inside else f" {text}", inside))
        self._values.set_labels(labels)
        self._data_inside = [label.inside for label in labels]

    def _draw_bars(self, values: np.ndarray, probabilities: bool, keep_axis: bool = False) -> None:
        n = len(values)
        rows = np.arange(n, dtype=float)  # row 0 (the top) is the best token
        self._top_bar.set_bars(rows[:1], values[:1])
        self._bars.set_bars(rows[1:], values[1:])
        if probabilities and self.fixed_axis.isChecked():
            x_range = FIXED_RANGE
        elif probabilities:
            high = 1.0 if float(values.max(initial=0)) > 0.75 else float(values.max(initial=0)) * 1.3 + 1e-6
            pad = 0.02 * high
            x_range = (-pad, high + pad)
        else:
            lo, hi = float(min(values.min(initial=0), 0.0)), float(max(values.max(initial=0), 0.0))
            span = (hi - lo) or 1.0
            x_range = (lo - 0.05 * span, hi + 0.25 * span)
        old = self._x_range
        if keep_axis and old is not None and x_range != FIXED_RANGE:  # only the temperature changed
            x_range = (min(old[0], x_range[0]), max(old[1], x_range[1]))
        # keep the axis while the new bars still fit and fill most of it: a toggle that barely moves the bars
        # then redraws no axis and no grid
        if (
            old is None
            or FIXED_RANGE in (x_range, old)
            or x_range[0] < old[0]
            or x_range[1] > old[1]
            or (not keep_axis and (x_range[1] - x_range[0]) < 0.75 * (old[1] - old[0]))
        ):
            self._x_range = x_range
            self._plot.setXRange(*x_range, padding=0)
        self._plot.setYRange(-0.6, max(n, 1) - 0.4, padding=0)

    def _set_ticks(self, labels: list[str]) -> None:
        key = tuple(labels)
        if key == self._ticks_key:
            return
        self._ticks_key = key
        ticks = [(i, elide_label(s, 14)) for i, s in enumerate(labels)]
        self._plot.getPlotItem().getAxis("left").setTicks([ticks])

    def shown_data(self) -> dict:
        return dict(self._data)
