"""Add & norm: each token's vector before and after the norm, with its mean and variance per token (LayerNorm)
or its mean and RMS per token (RMSNorm, which divides by the RMS and subtracts no mean)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present import words
from attnlab.present.engine_api import Trace, names
from attnlab.present.formulas import addnorm_texts, norm_word
from attnlab.present.stages import Stage, ViewState
from attnlab.ui import zoom
from attnlab.ui.axes import grid_axes, quiet_hidden_axes, show_grid_behind
from attnlab.ui.bars import SolidBars
from attnlab.ui.heatmap import cache_axis, tick_font
from attnlab.ui.raster import rect_updates
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    TokenTicks,
    array,
    layer_name,
    layer_side,
    missing,
    missing_message,
    norm_placement,
    note_font,
    residual_on,
    row_labels,
    sublayer_kind,
    sublayer_output,
    titled_heatmap,
)


def is_rmsnorm(trace: Trace) -> bool:
    """Whether this run's layer norms are RMSNorms (Llama, Qwen2): they record the RMS, not mean and variance."""
    return trace.config is not None and trace.config.norm == "rmsnorm"


BEFORE_COLOR = "#3b7dd8"
AFTER_COLOR = "#ff9f1c"


def bar_plot(parent: QtWidgets.QWidget, title: str) -> pg.PlotWidget:
    plot = rect_updates(pg.PlotWidget(parent, axisItems=grid_axes()))
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

    kinds = ("addnorm",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._placement = Note(self, delta=1, bold=True, reserve_lines=3)
        # three fixed slots read left to right as the data flows (no re-layout when the placement flips):
        # post-norm: F(x) | x + F(x) | LayerNorm(x + F(x));  pre-norm: x | LayerNorm(x) | x + F(LayerNorm(x))
        boxes = [
            titled_heatmap(self, rows_title="token" if i == 0 else "", cols_title="model dimension") for i in range(3)
        ]
        self._maps = [m for _, m in boxes]
        maps = QtWidgets.QHBoxLayout()
        for box, _ in boxes:
            maps.addWidget(box, 1)
        self._mean_plot = bar_plot(self, "mean per token")
        self._var_plot = bar_plot(self, "variance per token")
        self._bars: dict[str, SolidBars] = {}
        self._bar_dx: dict[str, float] = {}
        for stat, plot in (("mean", self._mean_plot), ("var", self._var_plot)):
            for which, color, dx in (("before", BEFORE_COLOR, -0.2), ("after", AFTER_COLOR, 0.2)):
                bars = SolidBars(color, width=0.38)
                plot.addItem(bars)
                self._bars[f"{stat}.{which}"] = bars
                self._bar_dx[f"{stat}.{which}"] = dx
        key = self._key = QtWidgets.QLabel(
            f"<span style='color:{BEFORE_COLOR}'>■</span> LayerNorm input &nbsp;&nbsp; "
            f"<span style='color:{AFTER_COLOR}'>■</span> LayerNorm output",
            self,
        )
        key.setFont(note_font())
        self._rms_titles = False  # whether the bar titles and key name RMSNorm
        bars_row = QtWidgets.QHBoxLayout()
        bars_row.addWidget(self._mean_plot, 1)
        bars_row.addWidget(self._var_plot, 1)
        self._note = Note(self, reserve_lines=3)  # the residual-off sentence must not re-layout the panel
        body = QtWidgets.QWidget(self)
        body_layout = QtWidgets.QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(self._placement)
        body_layout.addLayout(maps, 3)
        body_layout.addWidget(key)
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
        layer, n = stage.layer or "", stage.norm or 1
        prefix = names.norm(layer, n)
        rms = is_rmsnorm(trace)
        kind_stats = names.norm_stats("rmsnorm" if rms else "layernorm")  # in, rms, out / in, mean, var, out
        entry = {stat: names.norm_entry(prefix, stat) for stat in kind_stats}
        lost = missing(trace, list(entry.values()))
        norm = norm_placement(trace)
        if lost or norm is None:
            self._data = {
                "message": missing_message("This add & norm step", lost)
                if lost
                else "This trace does not say where its LayerNorms sit (it carries no run options)."
            }
            self._stack.show_message(self._data["message"])
            return
        self._stack.show_content()
        side = layer_side(layer)
        x_in, x_out = array(trace, entry["in"]), array(trace, entry["out"])  # [T, d] each
        labels = row_labels(trace, side, x_in.shape[0], self.vocab)  # decoder rows: "<s> → le"
        if rms:  # RMSNorm: the bars show the RMS it divides by, and the mean it leaves in place
            mean, var = x_in.mean(axis=1), array(trace, entry["rms"])  # [T] each
            out_mean, out_var = x_out.mean(axis=1), np.sqrt((x_out**2).mean(axis=1))
        else:
            mean, var = array(trace, entry["mean"]), array(trace, entry["var"])  # [T] each
            out_mean, out_var = x_out.mean(axis=1), x_out.var(axis=1)
        self._title_bars(rms)
        sub_name = sublayer_output(trace, layer, n)
        sub = words.sublayer_kind_words(sublayer_kind(trace, layer, n), short=True)
        resid_name = names.resid(layer, n)
        where, word = layer_name(layer), norm_word(trace.config)
        text, titles = addnorm_texts(norm, residual_on(trace), sub, n, where, word)
        toggled = tuple(addnorm_texts(p, r, sub, n, where, word)[0] for p in ("pre", "post") for r in (True, False))
        self._placement.show_text(text, alternatives=toggled)  # the placement and residual toggles move nothing
        order = (entry["in"], entry["out"], resid_name) if norm == "pre" else (sub_name, entry["in"], entry["out"])
        slots = list(zip(order, titles, strict=True))
        shown: dict[str, dict] = {}
        for panel_map, (name, title) in zip(self._maps, slots, strict=True):
            if name in trace:
                panel_map.draw(array(trace, name), labels, None, title=title, colormap=view.colormap, symmetric=True)
            else:
                panel_map.clear(missing_message(title, [name]))
            shown[name] = dict(panel_map.record)
        self._set_bars(mean, var, out_mean, out_var)
        self._set_ticks(labels, x_in.shape[0])
        residual_off = not residual_on(trace)
        note = (
            "Per token: divide by its RMS √(mean(x²) + ε), then scale by the learned gain g. No mean is "
            "subtracted (compare the mean bars before and after) and there is no shift."
            if rms
            else "Per token: subtract its mean, divide by √(variance + ε), then scale by γ and shift by β. "
            "The output has mean ≈ 0 and variance ≈ 1 per token (up to the learned γ and β)."
        )
        off_note = "The residual connection is switched OFF: the sub-layer's output replaces x. " + note
        self._note.show_text(off_note if residual_off else note, alternatives=(off_note,))
        self._data = {
            "before": shown[entry["in"]],
            "after": shown[entry["out"]],
            "resid": shown.get(resid_name) or shown[entry["in"]],
            "sublayer": shown.get(sub_name),
            "slots": [name for name, _ in slots],
            "mean": mean,
            "var": var,
            "out_mean": out_mean,
            "out_var": out_var,
            "norm": norm,
            "tokens": labels,
            "residual_off": residual_off,
            "kind": "rmsnorm" if rms else "layernorm",
        }
        if rms:
            self._data.update({"rms": var, "out_rms": out_var})

    def _title_bars(self, rms: bool) -> None:
        """RMSNorm's bars: the mean it does NOT subtract, and the RMS it divides by; LayerNorm's: mean, var."""
        if rms == self._rms_titles:
            return
        self._rms_titles = rms
        self._mean_plot.getPlotItem().setTitle(
            "mean per token (not subtracted)" if rms else "mean per token", size="11pt"
        )
        self._var_plot.getPlotItem().setTitle("RMS per token" if rms else "variance per token", size="11pt")
        word = words.word("rmsnorm" if rms else "norm")
        self._key.setText(
            f"<span style='color:{BEFORE_COLOR}'>■</span> {word} input &nbsp;&nbsp; "
            f"<span style='color:{AFTER_COLOR}'>■</span> {word} output"
        )

    def _set_bars(self, mean, var, out_mean, out_var) -> None:
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

    def _set_ticks(self, labels: list[str] | None, t: int) -> None:
        if (labels, t) == self._ticks_key:
            return
        self._ticks_key = (labels, t)
        for plot, ticks in zip((self._mean_plot, self._var_plot), self._token_ticks, strict=True):
            plot.setXRange(-0.8, t - 0.2, padding=0)
            ticks.set_labels(labels, t)

    def shown_data(self) -> dict:
        return dict(self._data)
