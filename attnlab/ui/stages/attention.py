"""Attention stages of one site: Q/K/V, the score maps (raw, scaled, masked, weights) and the mask. The vectors
after attention (weights·V per head, the concatenation, the W_O output) are in site_vectors.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtGui, QtWidgets

from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.attention import map_view, mask_view, qkv_view
from attnlab.present.views.model import MessageView
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    Note,
    PanelHeatmap,
    draw_matrix,
    titled_heatmap,
)
from attnlab.ui.stages.folding_row import FoldingRow
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class QKVPanel(StagePanel):
    """Queries, keys and values of the selected head side by side ([tokens × d_k] each)."""

    kinds = ("qkv",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        boxes = {p: titled_heatmap(self, cols_title="d_k dimension") for p in ("q", "k", "v")}
        self._maps = {p: m for p, (_, m) in boxes.items()}
        row = self._row = FoldingRow()  # one under the other in a narrow centre column
        for box, _ in boxes.values():
            row.addWidget(box, 1)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._row.fit()

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = qkv_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            for m in self._maps.values():
                m.clear(shown.message)
            self._note.show_text("")
            self._data = {"message": shown.message}
            return
        for p, matrix in (("q", shown.q), ("k", shown.k), ("v", shown.v)):
            draw_matrix(self._maps[p], matrix, view.colormap)
        self._header.show_text(shown.heading)
        self._data = {
            "head": shown.head,
            "n_heads": shown.n_heads,
            **{p: dict(m.record) for p, m in self._maps.items()},
        }
        self._data["kv_head"], self._data["sharing"] = shown.kv_head, shown.sharing
        self._note.show_text(shown.note)

    def shown_data(self) -> dict:
        return dict(self._data)


class MapPanel(StagePanel):
    """The body of the one-map panels: a bold header, one heatmap under it, and a note below."""

    ROW_FLOOR = zoom.ROW_PX_SINGLE  # the least pixels per row presenting (zoom.row_floor)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(self, header=self._header, row_floor=self.ROW_FLOOR)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._map, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def shown_data(self) -> dict:
        if "source" in self._map.record:  # a long map: its overview as drawn now (it may arrive after the stage)
            return {**self._data, **self._map.record}
        return dict(self._data)


class AttentionMapPanel(MapPanel):
    """[Tq × Tk] map of the selected head: raw scores, scaled scores, masked scores or softmax weights."""

    kinds = ("scores", "scaled", "biased", "capped", "masked", "weights")

    ROW_FLOOR = zoom.ROW_PX_ATTENTION  # the size of one head's map presenting

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = map_view(trace, stage, view, self.vocab, defer=True)  # a long map: read off the GUI thread
        if isinstance(shown, MessageView):
            self._map.clear(shown.message)
            self._note.show_text("")
            self._data = dict(self._map.record)
            return
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._data = {**self._map.record, "head": shown.head, "n_heads": shown.n_heads, "kind": shown.kind}
        self._note.show_text(shown.note)


class MaskPanel(StagePanel):
    """The additive mask [Tq × Tk] as allowed / blocked cells. Clicking a cell asks to toggle it."""

    kinds = ("mask",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(self, header=self._header, row_floor=zoom.ROW_PX_ATTENTION)
        self._map.set_value_format(lambda v: "allowed (adds 0)")
        self._map.colorbar().setVisible(False)  # two states only: the note says what the colours mean
        self._hint = Note(self, bold=True)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._hint)
        layout.addWidget(self._map, 1)
        layout.addWidget(self._note)
        self._site = ""
        self._data: dict = {}
        self._map.cellClicked.connect(self._clicked)

    def _clicked(self, q: int, k: int) -> None:
        if self._site:
            self.maskCellToggled.emit(self._site, q, k)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        shown = mask_view(trace, stage, view, self.vocab)
        if isinstance(shown, MessageView):
            self._map.clear(shown.message)
            self._site = ""
            self._data = dict(self._map.record)
            self._hint.show_text("")
            self._note.show_text("")
            return
        self._site = stage.site or ""
        draw_matrix(self._map, shown.matrix, view.colormap)
        self._data = {**self._map.record, "matrix": shown.additive, "blocked": shown.blocked, "site": self._site}
        self._hint.show_text(shown.hint)
        self._note.show_text(shown.note)

    def shown_data(self) -> dict:
        return dict(self._data)
