"""The "why ÷ √dₖ?" stage: this site's scores before/after the division and the softmax entropy per head, beside
a random q·k experiment of a chosen d_k. The numbers come from attnlab.present.scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present.scaling import MAX_DK, random_scaling, scaling_sweep
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.scaling import random_draw_note, scale_why_view
from attnlab.ui.stages.addnorm import AFTER_COLOR, BEFORE_COLOR, bar_plot, bar_range
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, note_font

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

RAW_COLOR, SCALED_COLOR = BEFORE_COLOR, AFTER_COLOR


def _key_label(parent: QtWidgets.QWidget) -> QtWidgets.QLabel:
    key = QtWidgets.QLabel(
        f"<span style='color:{RAW_COLOR}'>■</span> without ÷√dₖ &nbsp;&nbsp; "
        f"<span style='color:{SCALED_COLOR}'>■</span> with ÷√dₖ",
        parent,
    )
    key.setFont(note_font())
    return key


def _spin(parent: QtWidgets.QWidget, name: str, lo: int, hi: int, value: int, prefix: str) -> QtWidgets.QSpinBox:
    spin = QtWidgets.QSpinBox(parent)
    spin.setObjectName(name)
    spin.setRange(lo, hi)
    spin.setValue(value)
    spin.setPrefix(prefix)
    spin.setFont(note_font())
    return spin


class ScaleWhyPanel(StagePanel):
    """Left: the live site (score histograms, entropy per head). Right: random q, k of a chosen d_k."""

    kinds = ("scale_why",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._hist = bar_plot(self, "scores of this site (all heads)")
        self._entropy = bar_plot(self, "softmax entropy per head (nats)")
        self._hist_curves = {
            w: self._hist.plot(
                [0, 1], [0], stepMode="center", fillLevel=0, pen=pg.mkPen(c, width=2), brush=pg.mkBrush(c + "60")
            )
            for w, c in (("raw", RAW_COLOR), ("scaled", SCALED_COLOR))
        }
        self._entropy_bars = {
            w: pg.BarGraphItem(x=[], height=[], width=0.38, brush=c, pen=None)
            for w, c in (("raw", RAW_COLOR), ("scaled", SCALED_COLOR))
        }
        for bars in self._entropy_bars.values():
            self._entropy.addItem(bars)
        self._uniform = pg.InfiniteLine(angle=0, pen=pg.mkPen("#888", width=1, style=pg.QtCore.Qt.PenStyle.DashLine))
        self._entropy.addItem(self._uniform)
        self._site_note = Note(self, reserve_lines=2)
        left = QtWidgets.QVBoxLayout()
        self._site_note.setAlignment(pg.QtCore.Qt.AlignmentFlag.AlignTop)
        for w, stretch in ((self._hist, 3), (self._entropy, 2), (self._site_note, 0)):
            left.addWidget(w, stretch)
        self._dk_spin = _spin(self, "scaleDkSpin", 1, MAX_DK, 64, "d_k = ")
        self._seed_spin = _spin(self, "scaleSeedSpin", 0, 9999, 0, "seed ")
        draw_title = QtWidgets.QLabel("random q, k (unit variance):", self)
        draw_title.setFont(note_font(bold=True))
        spins = QtWidgets.QHBoxLayout()
        for w in (self._dk_spin, self._seed_spin):
            spins.addWidget(w)
        spins.addStretch(1)
        # the title above its spin boxes: in one row they made this column ~460 px wide at least, and at the
        # default window size the left column's plots were squeezed until their titles were cut off
        controls = QtWidgets.QVBoxLayout()
        controls.addWidget(draw_title)
        controls.addLayout(spins)
        self._std_plot = bar_plot(self, "std of q·k vs d_k (log–log)")
        self._max_plot = bar_plot(self, "largest softmax weight vs d_k (32 keys)")
        for plot in (self._std_plot, self._max_plot):
            plot.getPlotItem().getViewBox().enableAutoRange()
        self._std_plot.setLogMode(x=True, y=True)
        self._std_plot.getPlotItem().getAxis("left").setTicks(
            [[(np.log10(v), f"{v:g}") for v in (0.5, 1, 2, 4, 8, 16, 32, 64)]]
        )
        self._max_plot.setLogMode(x=True, y=False)
        self._sweep_curves = {
            "sqrt": self._std_plot.plot([], [], pen=pg.mkPen("#888", width=1, style=pg.QtCore.Qt.PenStyle.DashLine)),
            "std_raw": self._std_plot.plot(
                [], [], pen=pg.mkPen(RAW_COLOR, width=2), symbol="o", symbolSize=5, symbolBrush=RAW_COLOR
            ),
            "std_scaled": self._std_plot.plot(
                [], [], pen=pg.mkPen(SCALED_COLOR, width=2), symbol="o", symbolSize=5, symbolBrush=SCALED_COLOR
            ),
            "max_raw": self._max_plot.plot(
                [], [], pen=pg.mkPen(RAW_COLOR, width=2), symbol="o", symbolSize=5, symbolBrush=RAW_COLOR
            ),
            "max_scaled": self._max_plot.plot(
                [], [], pen=pg.mkPen(SCALED_COLOR, width=2), symbol="o", symbolSize=5, symbolBrush=SCALED_COLOR
            ),
        }
        self._chosen = {p: pg.InfiniteLine(angle=90, pen=pg.mkPen("#d33", width=1)) for p in ("std", "max")}
        self._std_plot.addItem(self._chosen["std"])
        self._max_plot.addItem(self._chosen["max"])
        self._draw_note = Note(self, reserve_lines=3)
        self._draw_note.setAlignment(pg.QtCore.Qt.AlignmentFlag.AlignTop)
        self._draw_note.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Maximum)
        right = QtWidgets.QVBoxLayout()
        right.addLayout(controls)
        for w, stretch in ((self._std_plot, 3), (self._max_plot, 2), (self._draw_note, 0)):
            right.addWidget(w, stretch)
        columns = QtWidgets.QHBoxLayout()
        columns.addLayout(left, 1)
        columns.addLayout(right, 1)
        body = QtWidgets.QWidget(self)
        body_layout = QtWidgets.QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(self._header)
        body_layout.addWidget(_key_label(body))
        body_layout.addLayout(columns, 1)
        self._stack = MessageStack(body, self)
        QtWidgets.QVBoxLayout(self).addWidget(self._stack)
        self._site: dict = {}
        self._random: dict = {}
        self._sweep_seed: int | None = None
        self._dk_spin.valueChanged.connect(self._redraw_random)
        self._seed_spin.valueChanged.connect(self._redraw_random)
        self._redraw_random()

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = scale_why_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._site = {"message": shown.message}
            self._stack.show_message(shown.message)
            return
        self._stack.show_content()
        stats = shown.stats
        self._header.show_text(shown.heading)
        self._hist_curves["raw"].setData(stats.edges, stats.raw_counts)
        self._hist_curves["scaled"].setData(stats.edges, stats.scaled_counts)
        self._hist.setXRange(float(stats.edges[0]), float(stats.edges[-1]))
        self._hist.setYRange(0, float(max(stats.raw_counts.max(), stats.scaled_counts.max(), 1)) * 1.08)
        x = np.arange(len(stats.entropy_raw), dtype=float)
        self._entropy_bars["raw"].setOpts(x=x - 0.2, height=stats.entropy_raw, width=0.38)
        self._entropy_bars["scaled"].setOpts(x=x + 0.2, height=stats.entropy_scaled, width=0.38)
        self._uniform.setValue(stats.entropy_uniform)
        self._entropy.setXRange(-0.7, len(x) - 0.3, padding=0)
        self._entropy.setYRange(
            *bar_range(stats.entropy_raw, stats.entropy_scaled, np.array([stats.entropy_uniform])), padding=0
        )
        self._entropy.getPlotItem().getAxis("bottom").setTicks([shown.head_ticks])
        self._site_note.show_text(shown.note)
        self._site = {
            "site": stage.site or "",
            "d_k": stats.d_k,
            "edges": stats.edges,
            "raw_counts": stats.raw_counts,
            "scaled_counts": stats.scaled_counts,
            "std_raw": stats.std_raw,
            "std_scaled": stats.std_scaled,
            "entropy_raw": stats.entropy_raw,
            "entropy_scaled": stats.entropy_scaled,
            "entropy_uniform": stats.entropy_uniform,
        }

    def _redraw_random(self, *_: object) -> None:
        d_k, seed = self._dk_spin.value(), self._seed_spin.value()
        if seed != self._sweep_seed:
            self._sweep_seed = seed
            sweep = scaling_sweep(seed)
            for key in ("std_raw", "std_scaled", "max_raw", "max_scaled"):
                self._sweep_curves[key].setData(sweep["d_k"], sweep[key])
            self._sweep_curves["sqrt"].setData(sweep["d_k"], np.sqrt(sweep["d_k"]))
            self._random["sweep"] = sweep
        draw = random_scaling(d_k, seed)
        for line in self._chosen.values():
            line.setValue(np.log10(d_k))
        self._draw_note.show_text(random_draw_note(draw))
        self._random.update({"d_k": d_k, "seed": seed, "draw": draw})

    def shown_data(self) -> dict:
        return {**self._site, "random": dict(self._random)}
