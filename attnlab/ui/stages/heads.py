"""All heads of a site at once (a grid of small weight maps) and the token → token lines view of one head."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.heads import HEAD_TILES, HeadsView, heads_view
from attnlab.present.views.lines import KEY_HEADER, LINE_THRESHOLD, QUERY_HEADER, Line, lines_view, strong_links
from attnlab.present.views.long_map import MapPiece
from attnlab.present.views.model import MessageView
from attnlab.ui.plots.axes import name_scale
from attnlab.ui.plots.colormaps import get_colormap
from attnlab.ui.plots.head_grid import HeadGrid
from attnlab.ui.plots.heatmap import elide_label
from attnlab.ui.plots.raster import opaque_over, plot_background, rect_updates
from attnlab.ui.plots.tile_loader import TileLoader
from attnlab.ui.plots.value_labels import ValueLabel, ValueLabels
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    foreground_color,
    note_font,
)

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


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
        self._grid.headMenuRequested.connect(self.headMenuRequested)  # right click: the head's ablation menu
        self._loader = TileLoader(self)  # a long input's heads, read off the GUI thread
        self._loader.ready.connect(self._head_read)
        self._shown: HeadsView | MessageView | None = None

    def _draw_heads(self, shown: HeadsView) -> None:
        self._grid.set_heads(
            shown.weights, shown.rows, shown.cols, shown.masked, "", levels=shown.levels,
            cells=shown.cells, steps=shown.steps, sources=shown.sources,
        )  # fmt: skip
        bar = self._grid.colorbar()
        if bar is not None:  # a percentile scale says so (weight_scale.py)
            name_scale(bar, shown.scale_label)
        if shown.pending and shown.sources is not None:  # a long input: the heads not read yet, off the GUI thread
            sources = shown.sources
            self._loader.start([functools.partial(sources[h].overview, HEAD_TILES, HEAD_TILES) for h in shown.pending])
            self._grid.set_loading(len(shown.pending))

    def _head_read(self, generation: int, index: int, piece: object) -> None:
        """One head's overview tiles arrived from the TileLoader: into the grid."""
        shown = self._shown
        if generation != self._loader.generation or not isinstance(shown, HeadsView):
            return
        if isinstance(piece, MapPiece):
            shown.weights[shown.pending[index]] = piece.values  # [n_r, n_c] into [H, n_r, n_c]
            self._grid.set_heads(
                shown.weights, shown.rows, shown.cols, shown.masked, "", levels=shown.levels,
                cells=shown.cells, steps=shown.steps, sources=shown.sources,
            )  # fmt: skip
        self._grid.set_loading(self._loader.pending)

    def loading(self) -> bool:
        """Whether a long input's heads are still being read."""
        return self._loader.busy()

    def _clicked(self, head: int) -> None:
        self._grid.set_selected(head)
        self._data["head"] = head
        self.headSelected.emit(head)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = heads_view(trace, stage, view, self.vocab, defer=True)
        self._loader.cancel()
        self._shown = shown
        if isinstance(shown, MessageView):
            self._grid.clear(shown.message)
            self._header.show_text("")
            self._note.show_text("")
            self._data = {"message": shown.message}
            return
        if view.colormap != self._cmap:
            self._cmap = view.colormap
            self._grid.set_colormap(view.colormap)
        self._draw_heads(shown)
        self._header.show_text(shown.title)
        self._grid.set_selected(shown.head)
        self._data = {
            "weights": shown.weights,
            "rows": shown.rows,
            "cols": shown.cols,
            "masked": shown.masked,
            "head": shown.head,
            "n_heads": shown.n_heads,
            "title": shown.title,
        }
        self._note.show_text(shown.note)

    def shown_data(self) -> dict:
        return dict(self._data)


N_BUCKETS = 6  # line styles: weights are binned so a whole bin is one plot item


QUERY_X, KEY_X = 0.0, 1.0  # queries on the left, keys on the right (as BertViz draws them)
FADED_OPACITY = 0.12  # the other lines while one token's lines are isolated
HEADER_Y = -0.1  # the column headers hang from the top of the view, above the first token


class LinesPanel(StagePanel):
    """Token → token lines of the selected head: queries on the left, keys on the right, line strength ∝
    weight; only weights ≥ LINE_THRESHOLD are drawn. Hovering a token isolates its lines (the rest fade)."""

    kinds = ("lines",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = Note(self, delta=1, bold=True)
        self._plot = pg.PlotWidget(self)
        rect_updates(self._plot)
        self._plot.setMenuEnabled(False)
        self._plot.setMouseEnabled(x=False, y=False)
        self._plot.hideButtons()
        item = self._plot.getPlotItem()
        item.hideAxis("left")
        item.hideAxis("bottom")
        item.getViewBox().invertY(True)
        self._plot.setXRange(-0.75, 1.75, padding=0)
        self._plot.setYRange(HEADER_Y, 1.0, padding=0)
        self._buckets = [pg.PlotCurveItem(connect="pairs") for _ in range(N_BUCKETS)]
        self._focus_buckets = [pg.PlotCurveItem(connect="pairs") for _ in range(N_BUCKETS)]
        for curve in self._buckets + self._focus_buckets:
            self._plot.addItem(curve)
        self._weights: np.ndarray | None = None  # [Tq, Tk] of the head shown
        self._focus: tuple[str, int] | None = None  # ("query" | "key", index) under the mouse
        self._focus_drawn = False  # whether the focus curves hold any line (they are left alone while empty)
        self._plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self._dots = pg.ScatterPlotItem(size=10, pen=pg.mkPen(foreground_color()), brush=pg.mkBrush("#ff9f1c"))
        self._plot.addItem(self._dots)
        # every token name in one item (32 TextItems repainted and re-transformed themselves on every toggle);
        # query names end at their dot ("inside"), key names start at theirs, both in the text colour
        fg = foreground_color().name()
        self._token_labels = ValueLabels(note_font(), fg, inside_color=fg)
        self._plot.addItem(self._token_labels)
        self._headers = [
            pg.TextItem(text, anchor=(0.5, 0.0), color=foreground_color()) for text in (QUERY_HEADER, KEY_HEADER)
        ]
        for header, x in zip(self._headers, (QUERY_X, KEY_X), strict=True):
            header.setFont(note_font(1, bold=True))
            header.setPos(x, HEADER_Y)
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

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = lines_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._data = {"message": shown.message}
            self._stack.show_message(shown.message)
            return
        self._stack.show_content()
        self._place_labels(shown.rows, shown.cols)
        if view.colormap != self._cmap:
            self._cmap = view.colormap
            self._style_buckets(view.colormap)
        if self._weights is None or self._weights.shape != shown.weights.shape:
            self._focus = None
        self._weights = shown.weights
        self._draw_lines(shown.weights)
        self._title.show_text(shown.title)
        self._note.show_text(shown.note)
        self._data = {
            "weights": shown.weights,
            "rows": shown.rows,
            "cols": shown.cols,
            "head": shown.head,
            "n_heads": shown.n_heads,
            "threshold": shown.threshold,
            "lines": shown.lines,
            "query_x": QUERY_X,
            "key_x": KEY_X,
            "token_labels": self._token_labels.labels(),  # as drawn: query names "inside" (ending at their dot)
        }
        self._show_focus()

    def _place_labels(self, rows: list[str], cols: list[str]) -> None:
        key = (tuple(rows), tuple(cols))
        if key == self._labels_key:
            return
        self._labels_key = key
        y_k, y_q = self._ys(len(cols)), self._ys(len(rows))
        self._token_labels.set_labels(
            [ValueLabel(QUERY_X - 0.04, float(y), elide_label(t), True) for t, y in zip(rows, y_q, strict=True)]
            + [ValueLabel(KEY_X + 0.04, float(y), elide_label(t), False) for t, y in zip(cols, y_k, strict=True)]
        )
        self._dots.setData(np.r_[np.full(len(rows), QUERY_X), np.full(len(cols), KEY_X)], np.r_[y_q, y_k])

    def _style_buckets(self, colormap: str) -> None:
        """Stronger weight = wider, less faded line. On a dark background the colours come from the top of
        the colour map; on a light one from its dark end, so the strongest lines always stand out. The fading
        is mixed into the colour beforehand (opaque pens: a translucent line is a fill Qt hands to its
        thread pool, see raster.py); the buckets are drawn weakest first, so stronger lines lie on top."""
        cmap = get_colormap(colormap)
        background = plot_background()
        dark = background.lightnessF() < 0.5
        for b, (curve, focus) in enumerate(zip(self._buckets, self._focus_buckets, strict=True)):
            strength = (b + 1) / N_BUCKETS
            color = cmap.map(0.35 + 0.65 * strength if dark else 0.55 - 0.45 * strength, mode="qcolor")
            color.setAlpha(int(70 + 185 * strength))
            color = opaque_over(color, background)
            curve.setPen(pg.mkPen(color, width=1.0 + 1.6 * b))
            focus.setPen(pg.mkPen(color, width=1.5 + 1.6 * b))

    def _draw_lines(
        self, weights: np.ndarray, keep: np.ndarray | None = None, curves: list[pg.PlotCurveItem] | None = None
    ) -> list[Line]:
        """Lines of weight ≥ LINE_THRESHOLD into `curves` (the buckets); `keep` [Tq, Tk] bool limits them."""
        tq, tk = weights.shape
        y_q, y_k = self._ys(tq), self._ys(tk)
        q_idx, k_idx, values = strong_links(weights, keep)
        edges = np.linspace(LINE_THRESHOLD, 1.0, N_BUCKETS + 1)
        which = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, N_BUCKETS - 1)
        for b, curve in enumerate(curves or self._buckets):
            sel = which == b
            n = int(sel.sum())
            xs = np.tile([QUERY_X, KEY_X], n)
            ys = np.empty(2 * n)
            ys[0::2] = y_q[q_idx[sel]]
            ys[1::2] = y_k[k_idx[sel]]
            curve.setData(xs, ys)
        return [(int(q), int(k), float(v)) for q, k, v in zip(q_idx, k_idx, values, strict=True)]

    # ---- hover: one token's lines -------------------------------------------------------------------------
    def hover_token(self, side: str | None, index: int = 0) -> None:
        """Isolate the lines of query `index` (side "query") or key `index` (side "key"); None shows all."""
        focus = None if side is None else (side, int(index))
        if focus != self._focus:
            self._focus = focus
            self._show_focus()

    def _show_focus(self) -> None:
        weights, focus = self._weights, self._focus
        tq, tk = weights.shape if weights is not None else (0, 0)
        if focus is not None and not 0 <= focus[1] < (tq if focus[0] == "query" else tk):
            focus = self._focus = None
        opacity = 1.0 if focus is None else FADED_OPACITY
        for curve in self._buckets:
            if curve.opacity() != opacity:
                curve.setOpacity(opacity)
        if focus is None and not self._focus_drawn:  # nothing isolated before or now: the focus lines stay empty
            self._data["focus"], self._data["focus_lines"] = None, []
            return
        keep = np.zeros((tq, tk), dtype=bool)
        if focus is not None:
            (keep[focus[1], :] if focus[0] == "query" else keep[:, focus[1]]).fill(True)
        isolated = self._draw_lines(weights, keep, self._focus_buckets) if weights is not None else []
        self._focus_drawn = bool(isolated)
        self._data["focus"] = focus
        self._data["focus_lines"] = isolated

    def _on_mouse_moved(self, scene_pos: QtCore.QPointF) -> None:
        """The token nearest the mouse on the side it is over (queries left half, keys right half)."""
        if self._weights is None or not self._plot.isVisible():
            return
        point = self._plot.getPlotItem().getViewBox().mapSceneToView(scene_pos)
        x, y = point.x(), point.y()
        tq, tk = self._weights.shape
        if QUERY_X - 0.75 <= x <= QUERY_X + 0.3:
            side, n = "query", tq
        elif KEY_X - 0.3 <= x <= KEY_X + 0.75:
            side, n = "key", tk
        else:
            self.hover_token(None)
            return
        self.hover_token(side, min(max(int(y * n), 0), n - 1)) if 0.0 <= y <= 1.0 else self.hover_token(None)

    def leaveEvent(self, event: QtCore.QEvent) -> None:
        self.hover_token(None)
        super().leaveEvent(event)

    def shown_data(self) -> dict:
        return dict(self._data)
