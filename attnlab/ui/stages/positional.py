"""The positional-encoding stage: the encoding as a heatmap, a few dimensions as curves over the positions, and
the sinusoid formula checked against the numbers (or the learned / rotary / none cases said in words)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.positional import PECurve, PositionalView, positional_view
from attnlab.ui.plots.axes import grid_axes, show_grid_behind
from attnlab.ui.plots.heatmap import tick_font
from attnlab.ui.plots.raster import rect_updates
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import MessageStack, Note, PanelHeatmap, TokenTicks, draw_matrix, foreground_color
from attnlab.ui.stages.windowed import PositionWindowing
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class PositionalPanel(StagePanel):
    """The positional encoding [tokens × d_model] and, for a few dimensions, its values as curves."""

    kinds = ("pos",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(
            self,
            rows_title="position",
            cols_title="model dimension",
            header=self._header,
            row_floor=zoom.ROW_PX_POSITIONAL,
        )
        self._curves_view = pg.GraphicsLayoutWidget(self)
        rect_updates(self._curves_view)
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
        self.windowing = PositionWindowing(self, self._map, zoom.ROW_PX_POSITIONAL)
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
        layout.addWidget(self.windowing.bar)
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
        view = self.windowing.view(trace, stage, view, stage.side or "src")
        shown = positional_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._stack.show_message(shown.message)
            self._data = {"message": shown.message}
            return
        self._stack.show_content()
        draw_matrix(self._map, shown.matrix, view.colormap)
        curves = self._draw_curves(shown)
        self._set_ticks(shown.labels, shown.positions, shown.first)
        self._data = {**self._map.record, "kind": shown.encoding, "dims": shown.dims, "curves": curves}
        self._note.show_text(shown.note)

    def _draw_curves(self, shown: PositionalView) -> dict[int, np.ndarray]:
        pe = shown.matrix.matrix  # [T, d]
        cached = self._curves_of
        if cached is not None and cached[0] == shown.dims and np.array_equal(cached[1], pe):
            return {curve.dim: curve.values for curve in shown.curves}  # same table and dimensions: up to date
        self._curves_of = (shown.dims, pe)
        for i, pe_curve in enumerate(shown.curves):
            self._draw_curve(i, pe_curve, len(shown.curves))
        for curve, markers in zip(self._curves[len(shown.curves) :], self._markers[len(shown.curves) :], strict=True):
            curve.setVisible(False)
            markers.setVisible(False)
        if shown.sinusoidal:
            self._plot.setYRange(-1.1, 1.1, padding=0)
        else:
            self._plot.enableAutoRange(axis="y")
        key = tuple(curve.legend for curve in shown.curves)
        if key != self._legend_key:
            self._legend_key = key
            self._legend.clear()
            for i, pe_curve in enumerate(shown.curves):
                self._legend.addItem(self._curves[i], pe_curve.legend)
        return {curve.dim: curve.values for curve in shown.curves}

    def _draw_curve(self, i: int, pe_curve: PECurve, n_curves: int) -> None:
        curve, markers = self._pair(i)
        color = pg.intColor(i, hues=max(n_curves, 1), values=1, maxValue=220)
        curve.setData(pe_curve.xs, pe_curve.ys, pen=pg.mkPen(color, width=2.5))
        positions = np.arange(len(pe_curve.values), dtype=np.float64)  # [T]
        markers.setData(positions, pe_curve.values, brush=pg.mkBrush(color), pen=pg.mkPen(foreground_color()))
        curve.setVisible(True)
        markers.setVisible(True)

    def _set_ticks(self, labels: list[str] | None, t: int, first: int) -> None:
        if (labels, t, first) == self._ticks_key:
            return
        self._ticks_key = (labels, t, first)
        self._plot.setXRange(-0.5, max(t - 0.5, 0.5), padding=0.02)
        self._token_ticks.set_labels(labels, t, first)

    def shown_data(self) -> dict:
        return dict(self._data)
