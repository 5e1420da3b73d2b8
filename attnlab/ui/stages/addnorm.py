"""Add & norm: each token's vector before and after the norm, with its mean and variance per token (LayerNorm)
or its mean and RMS per token (RMSNorm, which divides by the RMS and subtracts no mean).

Legible from the back (issue 32): the maps keep zoom.ROW_PX_ADDNORM per token row presenting, with the tokens as
row labels; the three maps stand side by side while their titles fit a third of the width, else one under the
other (titles whole); the two bar charts stand side by side while a token name fits under each bar, else one
under the other, and are tall enough for a few value ticks (BAR_LINES tick lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui, QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.addnorm import addnorm_view
from attnlab.present.views.model import BarsView, MessageView
from attnlab.ui.plots.axes import grid_axes, quiet_hidden_axes, show_grid_behind
from attnlab.ui.plots.bars import SolidBars
from attnlab.ui.plots.heatmap import cache_axis, tick_font
from attnlab.ui.plots.raster import rect_updates
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    TokenTicks,
    WrapTitle,
    draw_matrix,
    layer_side,
    titled_heatmap,
)
from attnlab.ui.stages.folding_row import ACROSS, shown_width, turn
from attnlab.ui.stages.windowed import PositionWindowing
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

BEFORE_COLOR = "#3b7dd8"
AFTER_COLOR = "#ff9f1c"
BAR_LINES = 3  # a bar chart's plot area is at least this many tick-label lines tall presenting (2 or 3 value ticks)
MIN_IMAGE_PX = 80  # the least width of a map's picture side by side (128 model dimensions: ≥ 0.6 px each)


def bar_plot(parent: QtWidgets.QWidget, title: str) -> pg.PlotWidget:
    plot = pg.PlotWidget(parent, axisItems=grid_axes())
    rect_updates(plot)
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(x=False, y=False)
    plot.hideButtons()
    item = plot.getPlotItem()
    item.setTitle(title, size=f"{zoom.points(11):g}pt")
    for axis in ("left", "bottom"):
        item.getAxis(axis).setTickFont(tick_font())
        item.getAxis(axis).enableAutoSIPrefix(False)
        cache_axis(item.getAxis(axis))
    show_grid_behind(item, y=True, alpha=0.25)
    quiet_hidden_axes(item)
    item.getViewBox().disableAutoRange()  # ranges are set from the data (auto-range costs a second paint)
    return plot


def bar_range(*values: np.ndarray) -> tuple[float, float]:
    """A y range that holds every bar and the zero line, with a little head room; lo < hi."""
    finite = [v[np.isfinite(v)] for v in values]
    lo = min((float(v.min()) for v in finite if v.size), default=0.0)
    hi = max((float(v.max()) for v in finite if v.size), default=1.0)
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    pad = 0.08 * ((hi - lo) or 1.0)
    return lo - (pad if lo < 0.0 else 0.0), hi + pad


class AddNormPanel(StagePanel):
    """Vectors entering and leaving LayerNorm n of a layer, plus per-token mean and variance bars."""

    kinds = ("addnorm", "post_norm")  # post_norm: a sandwich's norm on the sub-layer's output (Gemma 2)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._placement = Note(self, delta=1, bold=True, reserve_lines=3)
        # three fixed slots read left to right as the data flows (no re-layout when the placement flips):
        # post-norm: F(x) | x + F(x) | LayerNorm(x + F(x));  pre-norm: x | LayerNorm(x) | x + F(LayerNorm(x))
        boxes = [
            titled_heatmap(
                self,
                rows_title="token" if i == 0 else "",
                cols_title="model dimension",
                row_floor=zoom.ROW_PX_ADDNORM,
                wrap=True,
            )
            for i in range(3)
        ]
        self._maps = [m for _, m in boxes]
        self._titles = [title for _, m in boxes if isinstance(title := m.header(), WrapTitle)]
        for title in self._titles:
            title.row = self._titles
        maps = self._maps_row = QtWidgets.QBoxLayout(ACROSS)
        for box, _ in boxes:
            maps.addWidget(box, 1)
        self._mean_plot = bar_plot(self, "")
        self._var_plot = bar_plot(self, "")
        self._bars: dict[str, SolidBars] = {}
        self._bar_dx: dict[str, float] = {}
        for stat, plot in (("mean", self._mean_plot), ("var", self._var_plot)):
            for which, color, dx in (("before", BEFORE_COLOR, -0.2), ("after", AFTER_COLOR, 0.2)):
                bars = SolidBars(color, width=0.38)
                plot.addItem(bars)
                self._bars[f"{stat}.{which}"] = bars
                self._bar_dx[f"{stat}.{which}"] = dx
        self._bar_titles: tuple[str, ...] = ()  # the titles and key now shown (set from the view-model)
        bars_row = self._bars_row = QtWidgets.QBoxLayout(ACROSS)
        bars_row.addWidget(self._mean_plot, 1)
        bars_row.addWidget(self._var_plot, 1)
        self._note = Note(self, reserve_lines=3)  # the residual-off sentence must not re-layout the panel
        body = QtWidgets.QWidget(self)
        body_layout = QtWidgets.QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(self._placement)
        body_layout.addLayout(maps, 3)
        self.windowing = PositionWindowing(self, self._maps[0], zoom.ROW_PX_ADDNORM)
        body_layout.addWidget(self.windowing.bar)
        body_layout.addLayout(bars_row, 2)
        body_layout.addWidget(self._note)
        self._stack = MessageStack(body, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._stack)
        self._ticks_key: tuple | None = None
        self._y_ranges: dict[str, tuple[float, float]] = {}
        self._token_ticks = [TokenTicks(p.getPlotItem()) for p in (self._mean_plot, self._var_plot)]
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        view = self.windowing.view(trace, stage, view, layer_side(stage.layer or ""))
        shown_view = addnorm_view(trace, stage, view, self.vocab)
        if isinstance(shown_view, MessageView):
            self._data = {"message": shown_view.message}
            self._stack.show_message(shown_view.message)
            return
        self._stack.show_content()
        self._placement.show_text(shown_view.heading.text, alternatives=shown_view.heading.alternatives)
        shown: dict[str, dict] = {}
        for panel_map, slot in zip(self._maps, shown_view.slots, strict=True):
            if slot.message:
                panel_map.clear(slot.message)
            else:
                draw_matrix(panel_map, slot, view.colormap)
            shown[slot.name] = dict(panel_map.record)
        self._title_bars(shown_view.mean, shown_view.spread)
        mean, out_mean = (series.values for series in shown_view.mean.series)
        var, out_var = (series.values for series in shown_view.spread.series)
        self._set_bars(mean, var, out_mean, out_var)
        labels = shown_view.tokens
        self._set_ticks(labels, mean.shape[0], self.windowing.window.start if self.windowing.window else 0)
        self._arrange()
        self._bar_room()
        self._note.show_text(shown_view.note.text, alternatives=shown_view.note.alternatives)
        entry = shown_view.entries
        self._data = {
            "before": shown[entry["in"]],
            "after": shown[entry["out"]],
            "resid": shown.get(shown_view.resid) or shown[entry["in"]],
            "sublayer": shown.get(shown_view.sublayer),
            "slots": [slot.name for slot in shown_view.slots],
            "mean": mean,
            "var": var,
            "out_mean": out_mean,
            "out_var": out_var,
            "norm": shown_view.placement,
            "tokens": labels,
            "residual_off": shown_view.residual_off,
            "kind": shown_view.norm_kind,
        }
        if shown_view.norm_kind == "rmsnorm":
            self._data.update({"rms": var, "out_rms": out_var})

    def _title_bars(self, mean: BarsView, spread: BarsView) -> None:
        """The bar charts' titles with the colour key (RMSNorm's name the mean it does NOT subtract, and the RMS)."""
        titles = (mean.title, spread.title, *(series.label for series in mean.series))
        if titles == self._bar_titles:
            return
        self._bar_titles = titles
        # the colour key in each title (no line of its own: the bars keep their room at 1024×768 presenting)
        before, after = (series.label for series in mean.series)
        key = (
            f" &nbsp; <span style='color:{BEFORE_COLOR}'>■</span> {before} &nbsp; "
            f"<span style='color:{AFTER_COLOR}'>■</span> {after}"
        )
        self._mean_plot.getPlotItem().setTitle(mean.title + key, size=f"{zoom.points(11):g}pt")
        self._var_plot.getPlotItem().setTitle(spread.title + key, size=f"{zoom.points(11):g}pt")

    def _set_bars(self, mean: np.ndarray, var: np.ndarray, out_mean: np.ndarray, out_var: np.ndarray) -> None:
        x = np.arange(len(mean), dtype=float)
        values = {"mean.before": mean, "mean.after": out_mean, "var.before": var, "var.after": out_var}
        for key, bars in self._bars.items():
            bars.set_bars(x + self._bar_dx[key], values[key])
        for stat, plot, pair in (("mean", self._mean_plot, (mean, out_mean)), ("var", self._var_plot, (var, out_var))):
            y_range = bar_range(*pair)
            old = self._y_ranges.get(stat)
            # re-range only for a real change (no axis redraw for a toggle that barely moves the bars)
            if (
                old is None
                or y_range[1] > old[1]
                or y_range[0] < old[0]
                or (y_range[1] - y_range[0]) < 0.6 * (old[1] - old[0])
            ):
                self._y_ranges[stat] = y_range
                plot.setYRange(*y_range, padding=0)

    def _set_ticks(self, labels: list[str] | None, t: int, first: int) -> None:
        if (labels, t, first) == self._ticks_key:
            return
        self._ticks_key = (labels, t, first)
        for plot, ticks in zip((self._mean_plot, self._var_plot), self._token_ticks, strict=True):
            plot.setXRange(-0.8, t - 0.2, padding=0)
            ticks.set_labels(labels, t, first)

    def _bar_room(self) -> None:
        """Presenting, each bar chart's plot area is BAR_LINES tick lines tall (a few value ticks), above its
        title and its token names (one or two lines)."""
        if not zoom.presenting():
            return
        for plot in (self._mean_plot, self._var_plot):
            item = plot.getPlotItem()
            metrics = QtGui.QFontMetrics(tick_font())
            lines = self._token_ticks[0].lines()  # the token names' axis (TokenTicks: one line, or two)
            names = lines * metrics.height() + 34 if lines > 1 else item.getAxis("bottom").height()
            least = int(metrics.lineSpacing() * BAR_LINES + item.titleLabel.height() + names + 4)
            if least != plot.minimumHeight():
                plot.setMinimumHeight(least)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        """Maps side by side while every title takes at most two lines of a third of the width, and the maps' least
        widths fit; bars side by side while a token name fits under each bar; else one under the other. The
        width is what is on screen: a stage area narrower than the panel would cut the right-hand map off."""
        width = shown_width(self)
        if width <= 1:
            return
        spacing = max(self._maps_row.spacing(), 0)
        # side by side while every title takes at most two lines of a third (then wrapped, whole), and its
        # longest unbreakable piece fits one
        third = (width - 2 * spacing - 24) // 3
        need = 0.0
        for title in self._titles:
            text = title.fontMetrics().horizontalAdvance(title.full_text())
            need = max(need, 3 * (title.widest_piece() + 8), 3 * (text / 2 + 0.15 * third))
        # ... and each map keeps MIN_IMAGE_PX for its picture beside its token labels and colour bar (what is
        # not the picture is the same in either arrangement; before the first layout, the least widths)
        around = [
            m.width() - m.view_box().width() if m.view_box().width() > 1 else m.minimumSizeHint().width()
            for m in self._maps
        ]
        least = sum(around) + 3 * MIN_IMAGE_PX
        turn(self._maps_row, max(need, least) + 2 * spacing + 24, width)
        widest = self._token_ticks[0].widest()
        left_axis = self._mean_plot.getPlotItem().getAxis("left").width()
        n = max(self._ticks_key[1] if self._ticks_key else 0, 1)
        turn(self._bars_row, 2 * (left_axis + (n + 0.6) * (widest + 4)) + spacing + 16, width)  # TokenTicks.fit

    def arrangement(self) -> tuple[str, str]:
        """("across" or "down") for the maps and for the bar charts (for tests)."""
        maps, bars = ("across" if r.direction() == ACROSS else "down" for r in (self._maps_row, self._bars_row))
        return maps, bars

    def shown_data(self) -> dict:
        return dict(self._data)
