"""All heads of a site at once (a grid of small weight maps) and the token → token lines view of one head."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.stages import Stage, ViewState
from attnlab.ui.colormaps import get_colormap
from attnlab.ui.head_grid import HeadGrid
from attnlab.ui.heatmap import elide_label
from attnlab.ui.stages.attention import SiteView, blocked_cells
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    array,
    foreground_color,
    missing_message,
    note_font,
)


class HeadsPanel(StagePanel):
    """Every head's attention weights as small multiples; clicking a head selects it."""

    kinds = ("heads",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._grid = HeadGrid(self)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._grid, 1)
        layout.addWidget(self._note)
        self._cmap: str | None = None
        self._data: dict = {}
        self._grid.headClicked.connect(self._clicked)

    def _clicked(self, head: int) -> None:
        self._grid.set_selected(head)
        self._data["head"] = head
        self.headSelected.emit(head)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site = stage.site or ""
        name = names.site_entry(site, "weights")
        if name not in trace:
            message = missing_message("The attention weights", [name])
            self._grid.clear(message)
            self._header.show_text("")
            self._note.show_text("")
            self._data = {"message": message}
            return
        sv = SiteView(trace, site, view, self.vocab)
        weights = array(trace, name)  # [H, Tq, Tk]
        blocked = blocked_cells(trace, site)
        if view.colormap != self._cmap:
            self._cmap = view.colormap
            self._grid.set_colormap(view.colormap)
        title = f"all {sv.n_heads} heads · {sv.name} · query rows, key columns"
        self._grid.set_heads(weights, sv.rows, sv.cols, blocked, "", levels=(0.0, 1.0))
        self._header.show_text(title)
        self._grid.set_selected(sv.head)
        self._data = {"weights": weights, "rows": sv.rows, "cols": sv.cols, "masked": blocked,
                      "head": sv.head, "n_heads": sv.n_heads, "title": title}
        self._note.show_text("Each head has its own W_Q, W_K, W_V slice and so its own pattern. "
                             "Click a head to select it for the other steps (orange frame).")

    def shown_data(self) -> dict:
        return dict(self._data)


N_BUCKETS = 6  # line styles: weights are binned so a whole bin is one plot item
LINE_THRESHOLD = 0.05


class LinesPanel(StagePanel):
    """Token → token lines of the selected head: keys on the left, queries on the right, line strength ∝
    weight; only weights ≥ LINE_THRESHOLD are drawn."""

    kinds = ("lines",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = Note(self, delta=1, bold=True)
        self._plot = pg.PlotWidget(self)
        self._plot.setMenuEnabled(False)
        self._plot.setMouseEnabled(x=False, y=False)
        self._plot.hideButtons()
        item = self._plot.getPlotItem()
        item.hideAxis("left")
        item.hideAxis("bottom")
        item.getViewBox().invertY(True)
        self._plot.setXRange(-0.75, 1.75, padding=0)
        self._plot.setYRange(-0.06, 1.0, padding=0)
        self._buckets = [pg.PlotCurveItem(connect="pairs") for _ in range(N_BUCKETS)]
        for curve in self._buckets:
            self._plot.addItem(curve)
        self._dots = pg.ScatterPlotItem(size=10, pen=pg.mkPen(foreground_color()),
                                        brush=pg.mkBrush("#ff9f1c"))
        self._plot.addItem(self._dots)
        self._key_texts: list[pg.TextItem] = []
        self._query_texts: list[pg.TextItem] = []
        self._headers = [pg.TextItem(text, anchor=(0.5, 0.5), color=foreground_color())
                         for text in ("keys", "queries")]
        for header, x in zip(self._headers, (0.0, 1.0), strict=True):
            header.setFont(note_font(1, bold=True))
            header.setPos(x, -0.03)
            self._plot.addItem(header)
        self._labels_key: tuple | None = None
        self._cmap: str | None = None
        self._note = Note(self)
        self._stack = MessageStack(self._plot, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    @staticmethod
    def _ys(n: int) -> np.ndarray:
        return (np.arange(n) + 0.5) / max(n, 1)

    def _texts(self, pool: list[pg.TextItem], n: int, anchor: tuple[float, float]) -> list[pg.TextItem]:
        while len(pool) < n:
            text = pg.TextItem("", anchor=anchor, color=foreground_color())
            text.setFont(note_font())
            # token labels change only with the sentence: blit them from a pixel cache on every repaint
            text.textItem.setCacheMode(QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
            self._plot.addItem(text)
            pool.append(text)
        return pool

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site = stage.site or ""
        name = names.site_entry(site, "weights")
        if name not in trace:
            self._data = {"message": missing_message("The attention weights", [name])}
            self._stack.show_message(self._data["message"])
            return
        self._stack.show_content()
        sv = SiteView(trace, site, view, self.vocab)
        weights = array(trace, name)[sv.head]  # [Tq, Tk]
        tq, tk = weights.shape
        rows = sv.rows or [str(i) for i in range(tq)]
        cols = sv.cols or [str(i) for i in range(tk)]
        self._place_labels(rows, cols)
        if view.colormap != self._cmap:
            self._cmap = view.colormap
            self._style_buckets(view.colormap)
        drawn = self._draw_lines(weights)
        self._title.show_text(f"token → token lines · {sv.name} · {sv.head_text}")
        self._note.show_text(f"Each line joins a query (right) to a key it reads (left); bolder and "
                             f"thicker = more weight. Only weights ≥ {LINE_THRESHOLD:g} are drawn "
                             f"({len(drawn)} of {tq * tk}).")
        self._data = {"weights": weights, "rows": rows, "cols": cols, "head": sv.head, "n_heads": sv.n_heads,
                      "threshold": LINE_THRESHOLD, "lines": drawn}

    def _place_labels(self, rows: list[str], cols: list[str]) -> None:
        key = (tuple(rows), tuple(cols))
        if key == self._labels_key:
            return
        self._labels_key = key
        y_k, y_q = self._ys(len(cols)), self._ys(len(rows))
        for pool, labels, ys, x, anchor in ((self._key_texts, cols, y_k, -0.04, (1.0, 0.5)),
                                            (self._query_texts, rows, y_q, 1.04, (0.0, 0.5))):
            items = self._texts(pool, len(labels), anchor)
            for i, text in enumerate(items):
                if i < len(labels):
                    text.setText(elide_label(labels[i]))
                    text.setPos(x, ys[i])
                text.setVisible(i < len(labels))
        self._dots.setData(np.r_[np.zeros(len(cols)), np.ones(len(rows))], np.r_[y_k, y_q])

    def _style_buckets(self, colormap: str) -> None:
        """Stronger weight = wider, more opaque line. On a dark background the colours come from the top of
        the colour map; on a light one from its dark end, so the strongest lines always stand out."""
        cmap = get_colormap(colormap)
        dark = pg.mkColor(pg.getConfigOption("background")).lightnessF() < 0.5
        for b, curve in enumerate(self._buckets):
            strength = (b + 1) / N_BUCKETS
            color = cmap.map(0.35 + 0.65 * strength if dark else 0.55 - 0.45 * strength, mode="qcolor")
            color.setAlpha(int(70 + 185 * strength))
            curve.setPen(pg.mkPen(color, width=1.0 + 1.6 * b))

    def _draw_lines(self, weights: np.ndarray) -> list[tuple[int, int, float]]:
        tq, tk = weights.shape
        y_q, y_k = self._ys(tq), self._ys(tk)
        w = np.nan_to_num(weights, nan=0.0)
        q_idx, k_idx = np.nonzero(w >= LINE_THRESHOLD)
        values = w[q_idx, k_idx]
        edges = np.linspace(LINE_THRESHOLD, 1.0, N_BUCKETS + 1)
        which = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, N_BUCKETS - 1)
        for b, curve in enumerate(self._buckets):
            sel = which == b
            n = int(sel.sum())
            xs = np.tile([0.0, 1.0], n)
            ys = np.empty(2 * n)
            ys[0::2] = y_k[k_idx[sel]]
            ys[1::2] = y_q[q_idx[sel]]
            curve.setData(xs, ys)
        return [(int(q), int(k), float(v)) for q, k, v in zip(q_idx, k_idx, values, strict=True)]

    def shown_data(self) -> dict:
        return dict(self._data)
