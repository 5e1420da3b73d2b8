"""TokenTicks: token names as the ticks of a bar chart's bottom axis (add & norm's bars, the positional curves),
falling back to position numbers when the names would overlap."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui

from attnlab.present.facts import PREDICTS
from attnlab.ui.plots.heatmap import elide_label, tick_font


class TokenTicks:
    """Token names as the ticks of a plot's bottom axis (positions 0..n-1). When the names would overlap it
    falls back to position numbers; setTicks runs only when the labels or that choice change."""

    def __init__(self, plot_item: pg.PlotItem, *, with_index: bool = False):
        self._axis = plot_item.getAxis("bottom")
        self._vb = plot_item.getViewBox()
        self._with_index = with_index  # two-line ticks: "3" over "cat"
        self._metrics = QtGui.QFontMetrics(tick_font())
        self._labels: list[str] = []
        self._n = 0
        self._first = 0  # the position of the first tick (a window of positions starts later than 0)
        self._key: tuple | None = None
        self._lines = 1  # lines of tick text the axis has room for
        self._vb.sigResized.connect(self.fit)

    def set_labels(self, labels: list[str] | None, n: int, first: int = 0) -> None:
        """Ticks 0..n-1 named by `labels`; position numbers count from `first` when the names do not fit."""
        # a decoder row "<s> → le" stands on two lines ("<s> →" over "le"): its width is its wider half
        self._labels = [self._label(s) for s in labels] if labels else []
        self._n, self._first = n, first
        self.fit()

    def _label(self, text: str) -> str:
        """A tick's text: at most 8 characters a line; a decoder row "<s> → le" on two lines, "<s> →" over "le"
        (not under a position number: with_index has its two lines already)."""
        if PREDICTS in text and not self._with_index:
            given, predicted = text.split(PREDICTS, 1)
            return f"{elide_label(given, 6)}{PREDICTS.rstrip()}\n{elide_label(predicted, 8)}"
        return elide_label(text, 8)

    def lines(self) -> int:
        """The lines of text a tick takes with the names (2: under position numbers, or a decoder row)."""
        return 2 if self._with_index or any("\n" in s for s in self._labels) else 1

    def widest(self) -> int:
        """The pixels of the widest line of the names (0 without names)."""
        return max((self._metrics.horizontalAdvance(line) for s in self._labels for line in s.split("\n")), default=0)

    def fit(self, *_: object) -> None:
        n = self._n
        (lo, hi), width = self._vb.viewRange()[0], self._vb.width()
        px_per_token = width / max(hi - lo, 1e-9) if width > 1 else 0.0
        widest = self.widest()
        if self._labels and px_per_token >= widest + 4:
            ticks = [(i, f"{self._first + i}\n{s}" if self._with_index else s) for i, s in enumerate(self._labels)]
            mode = "labels"
        else:
            need = self._metrics.horizontalAdvance(str(max(n - 1, 0))) + 14
            step = max(1, int(np.ceil(need / px_per_token))) if px_per_token > 0 else max(1, n // 4)
            ticks = [(i, str(self._first + i)) for i in range(0, n, step)]
            mode = f"numbers/{step}"
        key = (tuple(self._labels), n, mode, self._first)
        if key == self._key:
            return
        self._key = key
        self._axis.setTicks([ticks])
        lines = 1 + (mode == "labels" and (self._with_index or any("\n" in s for s in self._labels)))
        if self._with_index or lines > 1 or self._lines > 1:
            self._lines = lines
            self._axis.setHeight(lines * self._metrics.height() + 34)
