"""The vectors after attention at one site: weights·V per head, the heads side by side (concat), and the W_O
output."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.site_vectors import SiteVectorView, site_vector_view
from attnlab.ui.stages.attention import MapPanel
from attnlab.ui.stages.common import draw_matrix

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class _SiteVectorPanel(MapPanel):
    """Shared body of the panels that show [Tq × columns] vectors after attention."""

    def _draw(self, trace: Trace, stage: Stage, view: ViewState) -> SiteVectorView | None:
        """Draw the stage's view-model and its note; None (after showing why) when the run lacks its entry."""
        shown = site_vector_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._map.clear(shown.message)
            self._note.show_text("")
            self._data = dict(self._map.record)
            return None
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._note.show_text(shown.note)
        return shown


class ContextPanel(_SiteVectorPanel):
    """weights · V of the selected head: [Tq × d_k]."""

    kinds = ("context",)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = self._draw(trace, stage, view)
        if shown is not None:
            self._data = {**self._map.record, "head": shown.head, "n_heads": shown.n_heads}


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
        shown = self._draw(trace, stage, view)
        if shown is None:
            return
        dk, tq = shown.head_width, shown.matrix.matrix.shape[0]
        self._place_bounds(shown.n_heads, dk, tq)
        self._box.setRect(shown.head * dk - 0.5, -0.5, dk, tq)
        self._data = {
            **self._map.record,
            "head": shown.head,
            "n_heads": shown.n_heads,
            "boundaries": list(shown.boundaries),
        }

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
        shown = self._draw(trace, stage, view)
        if shown is not None:
            self._data = {**self._map.record, "n_heads": shown.n_heads}
