"""The output panel's sampling parts (issue 35): the top-k / top-p cut drawn on the bars (the probabilities
before the cut in grey behind, a dashed line under the last kept bar) and the "Sample 20 times" chart: how often
each token came out of 20 draws with seeds seed … seed + 19. Everything comes from the view-model's
`SamplingCut` (present/views/output_sampling.py)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnlab.present.views.output_sampling import DRAWS, SampleCounts, SamplingCut
from attnlab.ui.plots.bars import SolidBars
from attnlab.ui.plots.heatmap import elide_label, tick_font
from attnlab.ui.stages.common import Note

RAW_COLOR = "#b8b8b8"  # a bar's probability before the cut
CUT_COLOR = "#d62728"  # the cut line
COUNT_COLOR = "#2ca02c"


class CutMarks:
    """The grey bars of the probabilities before the cut and the dashed cut line, added to the bars' plot."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.raw = SolidBars(RAW_COLOR, 0.72, horizontal=True)
        self.raw.setZValue(-1)  # behind the bars
        plot.addItem(self.raw)
        pen = pg.mkPen(CUT_COLOR, width=2, style=QtCore.Qt.PenStyle.DashLine)
        self.line = pg.InfiniteLine(angle=0, pen=pen, movable=False)
        self.line.setObjectName("outputCutLine")
        plot.addItem(self.line)
        self.line.hide()
        self.at: float | None = None  # the row the line is drawn at (between the last kept and the first cut)

    def show(self, cut: SamplingCut | None, probabilities: bool) -> None:
        raw = cut.raw if cut is not None and probabilities else np.zeros(0)  # [k]: none while the bars show logits
        self.raw.set_bars(np.arange(len(raw), dtype=float), raw)
        first_cut = next((i for i, kept in enumerate(cut.kept) if not kept), None) if cut is not None else None
        self.at = None if first_cut is None else first_cut - 0.5
        self.line.setVisible(self.at is not None)
        if self.at is not None:
            self.line.setValue(self.at)


class SampleChart(QtWidgets.QWidget):
    """A button that shows or hides a bar chart of 20 seeded draws' outcomes (hidden while the run is greedy)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.button = QtWidgets.QPushButton(f"Sample {DRAWS} times")
        self.button.setObjectName("outputSample20")
        self.button.setCheckable(True)
        self.button.setToolTip(
            f"Draw the next token {DRAWS} times, with seeds seed, seed + 1, …, from this run's logits (no new "
            "run), and show how often each token came out"
        )
        self.button.toggled.connect(self._shown)
        self.plot = pg.PlotWidget(self)
        self.plot.setObjectName("outputSamplesPlot")
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.setMaximumHeight(170)
        item = self.plot.getPlotItem()
        item.getViewBox().invertY(True)
        item.getAxis("left").setTickFont(tick_font())
        item.getAxis("bottom").setTickFont(tick_font())
        self.bars = SolidBars(COUNT_COLOR, 0.7, horizontal=True)
        self.plot.addItem(self.bars)
        self.note = Note(self)
        self.note.setObjectName("outputSamplesNote")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        layout.addWidget(self.note)
        self.samples: SampleCounts | None = None
        self._shown(False)

    def show_samples(self, samples: SampleCounts | None) -> None:
        self.samples = samples
        self.button.setEnabled(samples is not None)
        self.button.setToolTip(self.button.toolTip() if samples is not None else "Switch on sampling to draw")
        if samples is None:
            self.setVisible(False)
            return
        self.setVisible(self.button.isChecked())
        rows = np.arange(len(samples.counts), dtype=float)
        self.bars.set_bars(rows, np.asarray(samples.counts, dtype=float))
        ticks = [(i, f"{elide_label(s, 14)}") for i, s in enumerate(samples.labels)]
        self.plot.getPlotItem().getAxis("left").setTicks([ticks])
        self.plot.setXRange(0, max(samples.counts) * 1.15, padding=0)
        self.plot.setYRange(-0.6, max(len(rows), 1) - 0.4, padding=0)
        self.note.show_text(counts_text(samples))

    def _shown(self, on: bool) -> None:
        self.setVisible(on and self.samples is not None)


def counts_text(samples: SampleCounts) -> str:
    """The chart's sentence: the seeds, each token's count beside its probability after the cut."""
    each = ", ".join(
        f"“{label}” {n}× ({p:.0%})"
        for label, n, p in zip(samples.labels, samples.counts, samples.expected, strict=True)
    )
    return (
        f"{samples.total} draws with seeds {samples.seeds[0]}…{samples.seeds[1]}, from this run's logits: {each}. "
        f"The first draw, “{samples.labels[samples.ids.index(samples.first)]}”, is the token generate() draws first "
        "with this seed."
    )
