"""The positional-encoding stage: the encoding as a heatmap, a few dimensions as curves over the positions, and
the sinusoid formula checked against the numbers (or the learned / rotary / none cases said in words)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present.engine_api import Trace, names, sinusoidal_period
from attnlab.present.stages import Stage, ViewState
from attnlab.ui import zoom
from attnlab.ui.axes import grid_axes, show_grid_behind
from attnlab.ui.heatmap import tick_font
from attnlab.ui.raster import rect_updates
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    PanelHeatmap,
    TokenTicks,
    array,
    foreground_color,
    tokens,
)


def sinusoid_values(positions: np.ndarray, dim: int, d_model: int) -> np.ndarray:
    """PE[pos, dim] of the sinusoidal encoding at (possibly fractional) positions."""
    angle = positions / 10000.0 ** ((dim - dim % 2) / d_model)
    return np.sin(angle) if dim % 2 == 0 else np.cos(angle)


def is_sinusoidal(pe: np.ndarray) -> bool:
    """True when the recorded table [T, d] is the fixed sine/cosine encoding (not a learned one)."""
    t, d = pe.shape
    pos = np.arange(t, dtype=np.float64)[:, None]
    expected = np.stack([sinusoid_values(pos[:, 0], j, d) for j in range(d)], axis=1)
    return bool(np.allclose(pe, expected, atol=1e-4))


class PositionalPanel(StagePanel):
    """The positional encoding [tokens × d_model] and, for a few dimensions, its values as curves."""

    kinds = ("pos",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(self, rows_title="position", cols_title="model dimension", header=self._header)
        self._curves_view = rect_updates(pg.GraphicsLayoutWidget(self))
        self._plot = self._curves_view.addPlot(row=0, col=0, axisItems=grid_axes())
        self._plot.setMenuEnabled(False)
        self._plot.setMouseEnabled(x=False, y=False)
        self._plot.hideButtons()
        item = self._plot
        for axis in ("left", "bottom"):
            item.getAxis(axis).setTickFont(tick_font())
            item.getAxis(axis).enableAutoSIPrefix(False)
        style = {"font-size": f"{zoom.points(11):g}pt", "color": foreground_color().name()}
        item.setLabel("bottom", "position", **style)
        item.setLabel("left", "PE value", **style)
        show_grid_behind(item, x=True, y=True, alpha=0.2)
        self._legend = pg.LegendItem(labelTextSize=f"{zoom.points(11):g}pt", verSpacing=-4)
        self._curves_view.addItem(self._legend, row=0, col=1)
        self._curves: list[pg.PlotDataItem] = []
        self._markers: list[pg.ScatterPlotItem] = []
        self._legend_key: tuple | None = None
        self._curves_of: tuple[list[int], np.ndarray] | None = None
        self._ticks_key: tuple | None = None
        self._token_ticks = TokenTicks(self._plot, with_index=True)
        self._note = Note(self)
        self._stack = MessageStack(self._body(), self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._stack, 1)
        self._data: dict = {}

    def _body(self) -> QtWidgets.QWidget:
        body = QtWidgets.QWidget(self)
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._header)
        layout.addWidget(self._map, 5)
        layout.addWidget(self._curves_view, 4)
        layout.addWidget(self._note)
        return body

    def _pair(self, i: int) -> tuple[pg.PlotDataItem, pg.ScatterPlotItem]:
        while len(self._curves) <= i:
            curve = pg.PlotDataItem()
            markers = pg.ScatterPlotItem(size=9)
            self._plot.addItem(curve)
            self._plot.addItem(markers)
            self._curves.append(curve)
            self._markers.append(markers)
        return self._curves[i], self._markers[i]

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        side = stage.side or "src"
        name = names.side_entry(side, "pos")
        if name not in trace:
            config, options = trace.config, trace.options
            switched_off = config.adds_position_table and not options.positional
            text = (
                "Positional encoding is switched off for this run: nothing is added to the token embeddings, "
                "so the first layer sees the embeddings alone. Without position the model sees the tokens as "
                "an unordered bag: 'dog bites man' and 'man bites dog' give each word the same encoding. "
                "Tick 'Positional encoding' to add it again."
                if switched_off
                else "No positional encoding is added in this run: this model has none, or it uses rotary "
                "encoding (which rotates Q and K inside attention instead of adding a table here). Without "
                "position, the model sees the tokens as an unordered bag."
            )
            self._stack.show_message(text)
            self._data = {"message": text}
            return
        self._stack.show_content()
        pe = array(trace, name)  # [T, d]
        t, d = pe.shape
        labels = tokens(trace, side, t)
        sinusoidal = is_sinusoidal(pe)
        kind = "sinusoidal" if sinusoidal else "learned"
        self._map.draw(
            pe,
            labels,
            None,
            colormap=view.colormap,
            symmetric=True,
            title=f"{kind} positional encoding · {t} positions × {d} dimensions",
        )
        dims = [j for j in dict.fromkeys(view.pe_dims) if 0 <= j < d]
        curves = self._draw_curves(pe, dims, sinusoidal)
        self._set_ticks(labels, t)
        self._data = {**self._map.record, "kind": kind, "dims": dims, "curves": curves}
        if sinusoidal:
            self._note.show_text(
                "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same angle). "
                "Low dimensions swing fast, high ones slowly: together they give every "
                "position its own pattern. Dots mark the token positions."
            )
        else:
            self._note.show_text(
                "This model learned its position table during training: one trained "
                "vector per position. Dots mark the token positions."
            )

    def _draw_curves(self, pe: np.ndarray, dims: list[int], sinusoidal: bool) -> dict[int, np.ndarray]:
        t, d = pe.shape
        cached = self._curves_of
        if cached is not None and cached[0] == dims and np.array_equal(cached[1], pe):
            return {dim: pe[:, dim] for dim in dims}  # same table, same dimensions: the curves are up to date
        self._curves_of = (list(dims), pe)
        positions = np.arange(t, dtype=np.float64)
        fine = np.linspace(0.0, max(t - 1, 0), max(2, (t - 1) * 12 + 1))
        shown: dict[int, np.ndarray] = {}
        for i, dim in enumerate(dims):
            curve, markers = self._pair(i)
            color = pg.intColor(i, hues=max(len(dims), 1), values=1, maxValue=220)
            values = pe[:, dim]
            if sinusoidal:
                curve.setData(fine, sinusoid_values(fine, dim, d), pen=pg.mkPen(color, width=2.5))
            else:
                curve.setData(positions, values, pen=pg.mkPen(color, width=2.5))
            markers.setData(positions, values, brush=pg.mkBrush(color), pen=pg.mkPen(foreground_color()))
            curve.setVisible(True)
            markers.setVisible(True)
            shown[dim] = values
        for curve, markers in zip(self._curves[len(dims) :], self._markers[len(dims) :], strict=True):
            curve.setVisible(False)
            markers.setVisible(False)
        if sinusoidal:
            self._plot.setYRange(-1.1, 1.1, padding=0)
        else:
            self._plot.enableAutoRange(axis="y")
        key = (tuple(dims), sinusoidal, d)
        if key != self._legend_key:
            self._legend_key = key
            self._legend.clear()
            for i, dim in enumerate(dims):
                wave = "sin" if dim % 2 == 0 else "cos"
                text = f"dim {dim} ({wave}, period {sinusoidal_period(dim, d):.3g})" if sinusoidal else f"dim {dim}"
                self._legend.addItem(self._curves[i], text)
        return shown

    def _set_ticks(self, labels: list[str] | None, t: int) -> None:
        if (labels, t) == self._ticks_key:
            return
        self._ticks_key = (labels, t)
        self._plot.setXRange(-0.5, max(t - 0.5, 0.5), padding=0.02)
        self._token_ticks.set_labels(labels, t)

    def shown_data(self) -> dict:
        return dict(self._data)
