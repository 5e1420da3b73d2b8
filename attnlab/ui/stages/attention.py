"""Attention stages of one site: Q/K/V, the score maps (raw, scaled, masked, weights) and the mask. The vectors
after attention (weights·V per head, the concatenation, the W_O output) are in site_vectors.py."""

from __future__ import annotations

import math

import numpy as np
from PySide6 import QtWidgets

from attnlab.present import words
from attnlab.present.engine_api import Trace, names
from attnlab.present.explain_imported import gqa_text
from attnlab.present.facts import score_levels
from attnlab.present.formulas import scaled_title
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.site import SiteView, blocked_cells
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    Note,
    PanelHeatmap,
    array,
    axis_title,
    missing,
    missing_message,
    scaling_on,
    titled_heatmap,
)


def need_entries(panel_map: PanelHeatmap, trace: Trace, names: list[str], what: str) -> bool:
    """Clear the map with a message when a name is missing; True when everything is there."""
    lost = missing(trace, names)
    if lost:
        panel_map.clear(missing_message(what, lost))
    return not lost


class QKVPanel(StagePanel):
    """Queries, keys and values of the selected head side by side ([tokens × d_k] each)."""

    kinds = ("qkv",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        boxes = {p: titled_heatmap(self, cols_title="d_k dimension") for p in ("q", "k", "v")}
        self._maps = {p: m for p, (_, m) in boxes.items()}
        row = QtWidgets.QHBoxLayout()
        for box, _ in boxes.values():
            row.addWidget(box, 1)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site = stage.site or ""
        lost = missing(trace, [names.site_entry(site, p) for p in ("q", "k", "v")])
        if lost:
            message = missing_message("Q, K and V", lost)
            for m in self._maps.values():
                m.clear(message)
            self._note.show_text("")
            self._data = {"message": message}
            return
        sv = SiteView(trace, site, view, self.vocab)
        kv_head = trace.kv_head_map[sv.head] if trace.config is not None else sv.head  # GQA: a shared K/V head
        grouped = trace.config is not None and trace.n_kv_heads < trace.n_heads
        titles = {
            "q": "Q (queries)",
            "k": f"K (keys, K/V head {kv_head + 1})" if grouped else "K (keys)",
            "v": f"V (values, K/V head {kv_head + 1})" if grouped else "V (values)",
        }
        for p, panel_map in self._maps.items():
            matrix = array(trace, names.site_entry(site, p))[sv.head if p == "q" else kv_head]  # [T, d_k]
            side = sv.q_side if p == "q" else sv.k_side
            labels = sv.rows if p == "q" else sv.cols
            panel_map.titles(axis_title(side, "token"), "d_k dimension")
            panel_map.draw(matrix, labels, None, title=titles[p], colormap=view.colormap, symmetric=True)
        self._header.show_text(f"Q, K, V · {sv.name} · {sv.head_text}")
        self._data = {"head": sv.head, "n_heads": sv.n_heads, **{p: dict(m.record) for p, m in self._maps.items()}}
        source = (
            "Q from the decoder, K and V from the encoder output"
            if sv.q_side != sv.k_side
            else "all three from the same tokens"
        )
        dk = self._maps["q"].record["matrix"].shape[1]
        sharing = gqa_text(trace.n_heads, trace.n_kv_heads) if grouped else ""
        self._data["kv_head"], self._data["sharing"] = kv_head, sharing
        self._note.show_text(
            f"{sv.name}: every token's vector is multiplied by W_Q, W_K and W_V ({source}). "
            f"Shown: {words.head_words(sv.head)}'s slice, d_k = {dk} numbers per token."
            + (
                f" Grouped-query attention: {trace.n_kv_heads} K/V heads for {trace.n_heads} Q "
                f"heads — {sharing} ({words.head_words(sv.head)} reads K/V head {kv_head + 1})."
                if grouped
                else ""
            )
        )

    def shown_data(self) -> dict:
        return dict(self._data)


MAP_TEXT = {
    "scores": (
        "QKᵀ scores",
        "Cell (i, j) = qᵢ · kⱼ, the dot product of query i with key j: large when they point the same way.",
    ),
    "scaled": ("QKᵀ / √dₖ", ""),
    "masked": ("masked scores", "The mask adds 0 where a query may look and −∞ where it may not (hatched)."),
    "weights": (
        "attention weights",
        "softmax turns each row into weights between 0 and 1 that sum to 1: how "
        "much each query token takes from each key token.",
    ),
}


def map_title(trace: Trace, kind: str) -> str:
    """The map's title; the ÷√dₖ map says when scaling is switched off instead of claiming QKᵀ/√dₖ."""
    return scaled_title(scaling_on(trace)) if kind == "scaled" else MAP_TEXT[kind][0]


class MapPanel(StagePanel):
    """The body of the one-map panels: a bold header, one heatmap under it, and a note below."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(self, header=self._header)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._map, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def shown_data(self) -> dict:
        return dict(self._data)


class AttentionMapPanel(MapPanel):
    """[Tq × Tk] map of the selected head: raw scores, scaled scores, masked scores or softmax weights."""

    kinds = ("scores", "scaled", "masked", "weights")

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        site, kind = stage.site or "", stage.kind
        self._data = {}
        wanted = [names.site_entry(site, kind), names.site_entry(site, "weights")]
        if not need_entries(self._map, trace, wanted, MAP_TEXT[kind][0]):
            self._note.show_text("")
            self._data = dict(self._map.record)
            return
        sv = SiteView(trace, site, view, self.vocab)
        matrix = array(trace, names.site_entry(site, kind))[sv.head]  # [Tq, Tk]
        blocked = blocked_cells(trace, site)
        levels = (0.0, 1.0) if kind == "weights" else score_levels(trace, site, sv.head, view.colour_scale)
        self._map.titles(axis_title(sv.q_side, "query"), axis_title(sv.k_side, "key"))
        self._map.draw(
            matrix,
            sv.rows,
            sv.cols,
            masked=blocked,
            levels=levels,
            colormap=view.colormap,
            symmetric=None if kind == "weights" else True,
            title=f"{map_title(trace, kind)} · {sv.name} · {sv.head_text}",
        )
        self._data = {**self._map.record, "head": sv.head, "n_heads": sv.n_heads, "kind": kind}
        self._note.show_text(self._explain(trace, site, kind, matrix, blocked))

    def _explain(self, trace: Trace, site: str, kind: str, matrix: np.ndarray, blocked) -> str:
        valid = matrix[~blocked] if blocked is not None else matrix.ravel()
        valid = valid[np.isfinite(valid)]
        spread = f" Allowed values range from {valid.min():.2f} to {valid.max():.2f}." if valid.size else ""
        text = MAP_TEXT[kind][1]
        if kind == "scores" and blocked is not None:
            text += " Hatched cells will be blocked by the mask two steps later."
        if kind == "scaled":
            dk = int(trace[names.site_entry(site, "q")].shape[-1]) if names.site_entry(site, "q") in trace else 0
            if not scaling_on(trace):
                text = (
                    "Scaling is switched OFF: these are the raw scores. With large dₖ the softmax then "
                    "tends to put almost all weight on one key."
                )
            else:
                text = (
                    f"Every score is divided by √dₖ = √{dk} ≈ {math.sqrt(dk):.2f}, so the spread of the "
                    f"scores does not grow with the head size and the softmax stays soft."
                )
        if kind == "weights":
            row_sums = np.nansum(matrix, axis=1)
            text += f" Row sums: {row_sums.min():.3f} … {row_sums.max():.3f}."
            return text
        return text + spread


class MaskPanel(StagePanel):
    """The additive mask [Tq × Tk] as allowed / blocked cells. Clicking a cell asks to toggle it."""

    kinds = ("mask",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(self, header=self._header)
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
        site = stage.site or ""
        if not need_entries(self._map, trace, [names.site_entry(site, "mask")], "The mask"):
            self._site = ""
            self._data = dict(self._map.record)
            self._hint.show_text("")
            self._note.show_text("")
            return
        self._site = site
        sv = SiteView(trace, site, view, self.vocab)
        additive = array(trace, names.site_entry(site, "mask"))  # [Tq, Tk], 0 or -inf
        blocked = np.isneginf(additive)
        allowed = np.ones_like(additive)
        self._map.titles(axis_title(sv.q_side, "query"), axis_title(sv.k_side, "key"))
        self._map.draw(
            allowed,
            sv.rows,
            sv.cols,
            masked=blocked,
            levels=(0.0, 1.0),
            colormap=view.colormap,
            title=f"mask · {sv.name}",
        )
        self._data = {**self._map.record, "matrix": additive, "blocked": blocked, "site": site}
        self._hint.show_text("Click a cell to block or unblock that query → key pair; the model runs again.")
        n_blocked, total = int(blocked.sum()), blocked.size
        causal = (
            sv.q_side == sv.k_side and bool(np.all(blocked[np.triu_indices_from(blocked, 1)]))
            if blocked.shape[0] == blocked.shape[1] and blocked.shape[0] > 1
            else False
        )
        what = " The upper triangle is blocked: the causal (look-ahead) mask." if causal else ""
        self._note.show_text(
            f"Coloured = allowed (adds 0 to the score); hatched = blocked (adds −∞, so its "
            f"weight becomes exactly 0). {n_blocked} of {total} cells blocked.{what}"
        )

    def shown_data(self) -> dict:
        return dict(self._data)
