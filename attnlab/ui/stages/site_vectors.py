"""The vectors after attention at one site: weights·V per head, the heads side by side (concat), and the W_O
output."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present.engine_api import Trace, names
from attnlab.present.stages import Stage, ViewState
from attnlab.present.texts import counted
from attnlab.ui.stages.attention import MapPanel, SiteView, need_entries
from attnlab.ui.stages.common import (
    array,
    axis_title,
)


class _SiteVectorPanel(MapPanel):
    """Shared body of the panels that show [Tq × columns] vectors after attention."""

    def _lacks(self, trace: Trace, name: str, what: str) -> bool:
        """True (after showing why) when the trace has no `name` to draw."""
        if need_entries(self._map, trace, [name], what):
            return False
        self._note.show_text("")
        self._data = dict(self._map.record)
        return True


class ContextPanel(_SiteVectorPanel):
    """weights · V of the selected head: [Tq × d_k]."""

    kinds = ("context",)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site = stage.site or ""
        if self._lacks(trace, names.site_entry(site, "context"), "The context (weights · V)"):
            return
        sv = SiteView(trace, site, view, self.vocab)
        ctx = array(trace, names.site_entry(site, "context"))[sv.head]  # [Tq, d_k]
        self._map.titles(axis_title(sv.q_side, "query"), "d_k dimension")
        self._map.draw(
            ctx,
            sv.rows,
            None,
            colormap=view.colormap,
            symmetric=True,
            title=f"weights · V · {sv.name} · {sv.head_text}",
        )
        self._data = {**self._map.record, "head": sv.head, "n_heads": sv.n_heads}
        self._note.show_text(
            f"Row i is a weighted average of the value vectors, weighted by row i of the "
            f"attention weights: {ctx.shape[0]} queries × d_k = {ctx.shape[1]}."
        )


class ConcatPanel(_SiteVectorPanel):
    """The heads' contexts side by side [Tq × d_model], with a line at every head boundary."""

    kinds = ("concat",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._lines: list[pg.InfiniteLine] = []
        self._box = QtWidgets.QGraphicsRectItem()
        self._box.setPen(pg.mkPen("#ff9f1c", width=3))
        self._box.setZValue(20)
        self._map.plot_item().addItem(self._box, ignoreBounds=True)
        self._bounds_key: tuple | None = None

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site = stage.site or ""
        if self._lacks(trace, names.site_entry(site, "concat"), "The concatenated heads"):
            return
        sv = SiteView(trace, site, view, self.vocab)
        concat = array(trace, names.site_entry(site, "concat"))  # [Tq, d]
        tq, d = concat.shape
        dk = d // max(sv.n_heads, 1)
        self._map.titles(axis_title(sv.q_side, "query"), f"model dimension ({counted(sv.n_heads, 'head')} × {dk})")
        self._map.draw(
            concat,
            sv.rows,
            None,
            colormap=view.colormap,
            symmetric=True,
            title=f"concat(head 1 … head {sv.n_heads}) · {sv.name}",
        )
        self._place_bounds(sv.n_heads, dk, tq)
        self._box.setRect(sv.head * dk - 0.5, -0.5, dk, tq)
        boundaries = [h * dk - 0.5 for h in range(1, sv.n_heads)]
        self._data = {**self._map.record, "head": sv.head, "n_heads": sv.n_heads, "boundaries": boundaries}
        outputs = "The one head's output" if sv.n_heads == 1 else f"The {sv.n_heads} heads' outputs"
        self._note.show_text(
            f"{outputs} (d_k = {dk} each) side by side give back "
            f"d_model = {d} numbers per token; the orange box is {sv.head_text}."
        )

    def _place_bounds(self, n_heads: int, dk: int, tq: int) -> None:
        key = (n_heads, dk)
        if key == self._bounds_key:
            return
        self._bounds_key = key
        while len(self._lines) < 2 * (n_heads - 1):  # a wide white line under a thin black one
            for pen, z in ((pg.mkPen("w", width=4), 15), (pg.mkPen("k", width=1.5), 16)):
                line = pg.InfiniteLine(angle=90, movable=False, pen=pen)
                line.setZValue(z)
                self._map.plot_item().addItem(line, ignoreBounds=True)
                self._lines.append(line)
        for i, line in enumerate(self._lines):
            boundary = i // 2 + 1
            line.setVisible(boundary < n_heads)
            if boundary < n_heads:
                line.setValue(boundary * dk - 0.5)


class AttentionOutputPanel(_SiteVectorPanel):
    """The concatenation multiplied by W_O: [Tq × d_model], what the residual connection receives."""

    kinds = ("attn_out",)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site = stage.site or ""
        if self._lacks(trace, names.site_entry(site, "out"), "The attention output"):
            return
        sv = SiteView(trace, site, view, self.vocab)
        out = array(trace, names.site_entry(site, "out"))  # [Tq, d]
        self._map.titles(axis_title(sv.q_side, "query"), "model dimension")
        self._map.draw(out, sv.rows, None, colormap=view.colormap, symmetric=True, title=f"concat · W_O · {sv.name}")
        self._data = {**self._map.record, "n_heads": sv.n_heads}
        self._note.show_text(
            f"W_O ({out.shape[1]} × {out.shape[1]}) mixes the heads' results into one "
            f"vector per token; then it is added to the layer input (residual)."
        )
