"""The "LayerNorm vs BatchNorm" stage: both norms on the input of an add & norm step, their statistics side by
side, and a batch-length slider showing that a token's BatchNorm output depends on its neighbours.
The numbers come from attnlab.present.norm_compare."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.norm_compare import batchnorm_by_length
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.norm_compare import norm_compare_view, sweep_note
from attnlab.ui.plots.bars import SolidBars
from attnlab.ui.stages.addnorm import AFTER_COLOR, BEFORE_COLOR, bar_plot, bar_range
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, draw_matrix, note_font, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

LN_COLOR, BN_COLOR = AFTER_COLOR, BEFORE_COLOR
MEAN_COLOR, VAR_COLOR = "#8e6cc0", "#2a9d8f"  # the statistics bars (not the LN/BN colours of the curves)


def _bars(plot: pg.PlotWidget, color: str) -> SolidBars:
    bars = SolidBars(color, width=0.38)
    plot.addItem(bars)
    return bars


class NormComparePanel(StagePanel):
    """LayerNorm(x) | BatchNorm(x), per-token and per-feature statistics, and the batch-length experiment."""

    kinds = ("norm_vs_batch",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        boxes = [titled_heatmap(self, rows_title="token" if i == 0 else "", cols_title="feature") for i in range(2)]
        self._ln_map, self._bn_map = (m for _, m in boxes)
        maps = QtWidgets.QHBoxLayout()
        for box, _ in boxes:
            maps.addWidget(box, 1)
        self._ln_stats = bar_plot(self, "LayerNorm: mean and variance per TOKEN")
        self._bn_stats = bar_plot(self, "BatchNorm: mean and variance per FEATURE")
        self._stat_bars = {
            f"{kind}.{stat}": _bars(plot, color)
            for kind, plot in (("ln", self._ln_stats), ("bn", self._bn_stats))
            for stat, color in (("mean", MEAN_COLOR), ("var", VAR_COLOR))
        }
        key = QtWidgets.QLabel(
            f"<span style='color:{MEAN_COLOR}'>■</span> mean &nbsp;&nbsp; "
            f"<span style='color:{VAR_COLOR}'>■</span> variance (of x, before the norm)",
            self,
        )
        key.setFont(note_font())
        stats = QtWidgets.QHBoxLayout()
        stats.addWidget(self._ln_stats, 1)
        stats.addWidget(self._bn_stats, 1)
        self._token_spin = QtWidgets.QSpinBox(self)
        self._token_spin.setObjectName("normTokenSpin")
        self._token_spin.setPrefix("token ")
        self._length_slider = QtWidgets.QSlider(Qt.Orientation.Horizontal, self)
        self._length_slider.setObjectName("batchLengthSlider")
        self._length_label = QtWidgets.QLabel(self)
        for w in (self._token_spin, self._length_label):
            w.setFont(note_font())
        controls = QtWidgets.QHBoxLayout()
        controls.addWidget(self._token_spin)
        batch_word = QtWidgets.QLabel("batch = the first", self)
        batch_word.setFont(note_font())
        controls.addWidget(batch_word)
        controls.addWidget(self._length_slider, 1)
        controls.addWidget(self._length_label)
        self._vector_plot = bar_plot(self, "the chosen token after each norm")
        self._vector_plot.getPlotItem().getViewBox().enableAutoRange()
        self._change_plot = bar_plot(self, "largest change vs the whole sentence's batch")
        self._change_plot.getPlotItem().getViewBox().enableAutoRange()
        self._curves = {
            "ln": self._vector_plot.plot([], [], pen=pg.mkPen(LN_COLOR, width=2)),
            "bn": self._vector_plot.plot([], [], pen=pg.mkPen(BN_COLOR, width=2)),
            "ln_change": self._change_plot.plot(
                [], [], pen=pg.mkPen(LN_COLOR, width=2), symbol="o", symbolSize=5, symbolBrush=LN_COLOR
            ),
            "bn_change": self._change_plot.plot(
                [], [], pen=pg.mkPen(BN_COLOR, width=2), symbol="o", symbolSize=5, symbolBrush=BN_COLOR
            ),
        }
        self._length_line = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d33", width=1))
        self._change_plot.addItem(self._length_line)
        sweep_row = QtWidgets.QHBoxLayout()
        sweep_row.addWidget(self._vector_plot, 1)
        sweep_row.addWidget(self._change_plot, 1)
        sweep_key = QtWidgets.QLabel(
            f"<span style='color:{LN_COLOR}'>■</span> LayerNorm &nbsp;&nbsp; "
            f"<span style='color:{BN_COLOR}'>■</span> BatchNorm",
            self,
        )
        sweep_key.setFont(note_font())
        self._note = Note(self, reserve_lines=2)
        body = QtWidgets.QWidget(self)
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._header)
        layout.addLayout(maps, 3)
        layout.addWidget(key)
        layout.addLayout(stats, 2)
        layout.addLayout(controls)
        layout.addWidget(sweep_key)
        layout.addLayout(sweep_row, 2)
        layout.addWidget(self._note)
        self._stack = MessageStack(body, self)
        QtWidgets.QVBoxLayout(self).addWidget(self._stack)
        self._x: np.ndarray | None = None
        self._labels: list[str] | None = None
        self._data: dict = {}
        self._token_spin.valueChanged.connect(self._redraw_sweep)
        self._length_slider.valueChanged.connect(self._redraw_sweep)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = norm_compare_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._data = {"message": shown.message}
            self._stack.show_message(shown.message)
            return
        self._stack.show_content()
        cmp, x = shown.comparison, shown.comparison.x  # x: [T, d]
        self._labels = shown.tokens
        self._header.show_text(shown.heading)
        draw_matrix(self._ln_map, shown.ln, view.colormap)
        draw_matrix(self._bn_map, shown.bn, view.colormap)
        for kind, plot, mean, var in (
            ("ln", self._ln_stats, cmp.ln_mean, cmp.ln_var),
            ("bn", self._bn_stats, cmp.bn_mean, cmp.bn_var),
        ):
            pos = np.arange(len(mean), dtype=float)
            self._stat_bars[f"{kind}.mean"].set_bars(pos - 0.2, mean)
            self._stat_bars[f"{kind}.var"].set_bars(pos + 0.2, var)
            plot.setXRange(-0.8, len(mean) - 0.2, padding=0)
            plot.setYRange(*bar_range(mean, var), padding=0)
        self._x = x
        self._data = {
            "x": x,
            "ln_out": cmp.ln_out,
            "bn_out": cmp.bn_out,
            "ln_mean": cmp.ln_mean,
            "ln_var": cmp.ln_var,
            "bn_mean": cmp.bn_mean,
            "bn_var": cmp.bn_var,
            "tokens": self._labels,
        }
        t = x.shape[0]
        for widget in (self._token_spin, self._length_slider):
            widget.blockSignals(True)
        self._token_spin.setRange(0, t - 1)
        self._length_slider.setRange(self._token_spin.value() + 1, t)
        self._length_slider.setValue(t)  # a new run starts from the whole sentence as the batch
        for widget in (self._token_spin, self._length_slider):
            widget.blockSignals(False)
        self._redraw_sweep()

    def _redraw_sweep(self, *_: object) -> None:
        if self._x is None:
            return
        t, token = self._x.shape[0], self._token_spin.value()
        self._length_slider.blockSignals(True)
        self._length_slider.setRange(token + 1, t)  # the batch always holds the chosen token
        self._length_slider.blockSignals(False)
        length = self._length_slider.value()
        sweep = batchnorm_by_length(self._x, token)
        i = length - (token + 1)
        features = np.arange(self._x.shape[1], dtype=float)
        self._curves["ln"].setData(features, sweep.ln[i])
        self._curves["bn"].setData(features, sweep.bn[i])
        self._curves["ln_change"].setData(sweep.lengths.astype(float), sweep.ln_change)
        self._curves["bn_change"].setData(sweep.lengths.astype(float), sweep.bn_change)
        self._length_line.setValue(length)
        self._length_label.setText(f"{length} of {t} tokens")
        self._note.show_text(sweep_note(sweep, length, self._labels))
        self._data.update(
            {
                "token": token,
                "length": length,
                "ln_token": sweep.ln[i],
                "bn_token": sweep.bn[i],
                "ln_change": sweep.ln_change,
                "bn_change": sweep.bn_change,
            }
        )

    def shown_data(self) -> dict:
        return dict(self._data)
