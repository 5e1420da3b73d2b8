"""Input stages: tokenization (chips), token embeddings, positional encoding (heatmap + curves), their sum."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from attnlab.engine import names
from attnlab.engine.positional import sinusoidal_period
from attnlab.engine.trace import Trace
from attnlab.present.stages import Stage, ViewState
from attnlab.ui import zoom
from attnlab.ui.heatmap import printable_label, tick_font
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    SPECIAL_TOKENS,
    MessageStack,
    Note,
    PanelHeatmap,
    TokenTicks,
    array,
    foreground_color,
    missing,
    missing_message,
    note_font,
    side_name,
    titled_heatmap,
    tokens,
)
from attnlab.ui.stages.flow import flow_container

CHIP_STYLE = """
QLabel[chip] { border-radius: 9px; border-width: 2px; }
QLabel[chip="word"]    { background: #e6f0fb; color: #0d2440; border-style: solid; border-color: #3b7dd8; }
QLabel[chip="special"] { background: #fff2cc; color: #5a3d00; border-style: dashed; border-color: #c98a00; }
QLabel[chip="pad"]     { background: #ececec; color: #5a5a5a; border-style: dotted; border-color: #8a8a8a; }
QLabel[chip="unk"]     { background: #fde3e1; color: #6b1510; border-style: dashed; border-color: #c0392b; }
"""
SPECIAL_MEANING = {"<s>": "start", "</s>": "end", "<pad>": "padding", "<unk>": "unknown"}


def chip_kind(piece: str) -> str:
    if piece == "<pad>":
        return "pad"
    if piece == "<unk>":
        return "unk"
    return "special" if piece in SPECIAL_TOKENS else "word"


class TokensPanel(StagePanel):
    """The text split into its pieces: one chip per token with its position and id; specials stand out."""

    kinds = ("tokens",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._title = Note(self, delta=2, bold=True)
        scroll, self._inner, self._flow = flow_container(self)
        self._inner.setStyleSheet(CHIP_STYLE)
        self._count = Note(self, delta=1)
        self._legend = Note(self)
        self._stack = MessageStack(scroll, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._count)
        layout.addWidget(self._legend)
        self._chips: list[QtWidgets.QLabel] = []
        self._shown: tuple[tuple[str, ...], tuple[int, ...]] | None = None
        self._data: dict = {}

    def _chip(self, i: int) -> QtWidgets.QLabel:
        while len(self._chips) <= i:
            chip = QtWidgets.QLabel(self._inner)
            chip.setTextFormat(Qt.TextFormat.RichText)
            chip.setAlignment(Qt.AlignmentFlag.AlignCenter)
            chip.setContentsMargins(10, 4, 10, 4)
            chip.setProperty("chip", "")
            self._flow.addWidget(chip)
            self._chips.append(chip)
        return self._chips[i]

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        side = stage.side or "src"
        need = missing(trace, [names.side_entry(side, "tokens"), names.side_entry(side, "ids")])
        if need:
            self._data = {"message": missing_message("Tokenization", need)}
            self._stack.show_message(self._data["message"])
            return
        pieces = [str(t) for t in trace[names.side_entry(side, "tokens")]]
        ids = [int(i) for i in trace.numpy(names.side_entry(side, "ids"))]
        specials = [p for p in pieces if p in SPECIAL_TOKENS]
        self._data = {
            "tokens": pieces,
            "ids": ids,
            "specials": [chip_kind(p) != "word" for p in pieces],
            "count": len(pieces),
        }
        self._stack.show_content()
        self._title.show_text(f"{side_name(side).capitalize()}: the text cut into tokens, each with its id")
        if self._shown != (tuple(pieces), tuple(ids)):
            self._shown = (tuple(pieces), tuple(ids))
            self._fill(pieces, ids)
        words = len(pieces) - len(specials)
        added = ", ".join(dict.fromkeys(specials)) if specials else "none"
        self._count.show_text(f"{len(pieces)} tokens: {words} from the text + {len(specials)} special ({added})")
        meaning = ", ".join(f"{s} = {SPECIAL_MEANING[s]}" for s in dict.fromkeys(specials))
        self._legend.show_text(
            "Each chip: position (top), token piece, vocabulary id (bottom). "
            + (f"Dashed chips are special tokens: {meaning}." if meaning else "")
        )

    def _fill(self, pieces: list[str], ids: list[int]) -> None:
        for i, (piece, token_id) in enumerate(zip(pieces, ids, strict=True)):
            chip = self._chip(i)
            text = printable_label(piece).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            chip.setText(
                f"<div style='font-size:11pt;color:#777'>{i}</div>"
                f"<div style='font-size:24pt'>{text}</div>"
                f"<div style='font-size:12pt;color:#555'>id {token_id}</div>"
            )
            kind = chip_kind(piece)
            if chip.property("chip") != kind:
                chip.setProperty("chip", kind)
                chip.style().unpolish(chip)
                chip.style().polish(chip)
            chip.setVisible(True)
        for chip in self._chips[len(pieces) :]:
            chip.setVisible(False)
        self._flow.invalidate()

    def shown_data(self) -> dict:
        return dict(self._data)


class EmbeddingPanel(StagePanel):
    """[tokens × d_model] token embeddings: one row of the embedding table per token."""

    kinds = ("embed",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._header = Note(self, delta=1, bold=True)
        self._map = PanelHeatmap(self, rows_title="token", cols_title="model dimension", header=self._header)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._header)
        layout.addWidget(self._map, 1)
        layout.addWidget(self._note)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        side = stage.side or "src"
        name = names.side_entry(side, "embed")
        if name not in trace:
            self._map.clear(missing_message("The token embedding", [name]))
            self._note.show_text("")
            return
        x = array(trace, name)  # [T, d]
        self._map.draw(
            x,
            tokens(trace, side, x.shape[0]),
            None,
            colormap=view.colormap,
            symmetric=True,
            title=f"{side_name(side)} embeddings · {x.shape[0]} tokens × {x.shape[1]} dimensions",
        )
        self._note.show_text(
            "Each row is the embedding-table row picked by that token's id: the same token "
            "always gets the same row, wherever it stands."
        )

    def shown_data(self) -> dict:
        return dict(self._map.record)


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
        self._curves_view = pg.GraphicsLayoutWidget(self)
        self._plot = self._curves_view.addPlot(row=0, col=0)
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
        item.showGrid(x=True, y=True, alpha=0.2)
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
            text = (
                "No positional encoding is added in this run: it is switched off, or this model has "
                "none, or it uses rotary encoding (which rotates Q and K inside attention instead of "
                "adding a table here). Without position, the model sees the tokens as an unordered bag."
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


class InputSumPanel(StagePanel):
    """embedding + positional encoding = the input of the first layer, three heatmaps on one colour scale."""

    kinds = ("input",)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        boxes = {
            part: titled_heatmap(self, rows_title="token" if part == "embed" else "", cols_title="model dimension")
            for part in ("embed", "pos", "input")
        }
        self._maps = {part: m for part, (_, m) in boxes.items()}
        self._pos_box = boxes["pos"][0]
        for part in ("embed", "pos"):  # one colour scale for all three: the sum's colour bar serves them all
            self._maps[part].colorbar().setVisible(False)
        self._plus = self._operator("+")
        self._equals = self._operator("=")
        row = QtWidgets.QHBoxLayout()
        row.addWidget(boxes["embed"][0], 1)
        row.addWidget(self._plus)
        row.addWidget(self._pos_box, 1)
        row.addWidget(self._equals)
        row.addWidget(boxes["input"][0], 1)
        self._note = Note(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(row, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def _operator(self, text: str) -> QtWidgets.QLabel:
        label = QtWidgets.QLabel(text, self)
        label.setFont(note_font(12, bold=True))
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        return label

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        side = stage.side or "src"
        name = names.side_entry(side, "input")
        if name not in trace:
            message = missing_message("The layer input", [name])
            for m in self._maps.values():
                m.clear(message)
            self._data = {"message": message}
            return
        x = array(trace, name)  # [T, d]
        labels = tokens(trace, side, x.shape[0])
        embed, pos = names.side_entry(side, "embed"), names.side_entry(side, "pos")
        parts = {
            "embed": array(trace, embed) if embed in trace else None,
            "pos": array(trace, pos) if pos in trace else None,
            "input": x,
        }
        titles = {"embed": "token embedding", "pos": "positional encoding", "input": "sum = layer input"}
        extras = self._imported_parts(trace, side, parts, titles)
        bound = max(float(np.abs(p).max()) for p in parts.values() if p is not None and p.size) or 1.0
        for part, matrix in parts.items():
            if matrix is None:  # the box stays in place (no re-layout on the toggle) and says why it is empty
                self._maps[part].clear(
                    "positional encoding is off: nothing is added (+ 0)" if part == "pos" else "not in this run"
                )
                continue
            self._maps[part].draw(
                matrix, labels, None, title=titles[part], colormap=view.colormap, levels=(-bound, bound)
            )
        has_pos = parts["pos"] is not None
        self._data = {**self._maps["input"].record, "embed": parts["embed"], "pos": parts["pos"], **extras}
        if extras:
            self._note.show_text(
                (
                    "Token embedding + position + token type (0 for every token of one sentence)"
                    if "type" in extras
                    else "Token embedding + position"
                )
                + (
                    ", then the embedding LayerNorm: its output is what the first layer reads."
                    if "embed_norm" in extras
                    else ": this sum is what the first layer reads."
                )
            )
        elif has_pos:
            self._note.show_text(
                f"Each token's vector is its embedding plus the encoding of its position "
                f"({x.shape[0]} × {x.shape[1]} each, one shared colour scale). This sum is "
                f"what the first layer reads."
            )
        else:
            self._note.show_text(
                "No positional table is added here, so the layer input equals the "
                "embedding: without position information, reordering the words changes "
                "nothing (unless rotary encoding adds position inside attention)."
            )

    def _imported_parts(self, trace: Trace, side: str, parts: dict, titles: dict) -> dict:
        """BERT-like inputs: the token-type embedding joins the middle box, and the embedding LayerNorm turns
        '=' into '→ LayerNorm →'. Returns what was added ({} for the classroom models)."""
        type_name = names.side_entry(side, names.TYPE)
        norm_out = names.norm_entry(names.embed_norm(side), "out")
        extras: dict = {}
        if type_name in trace:
            token_type = array(trace, type_name)  # [T, d]
            parts["pos"] = token_type if parts["pos"] is None else parts["pos"] + token_type
            titles["pos"] = "position + token type"
            extras["type"] = token_type
        has_norm = norm_out in trace
        self._equals.setText("→ LayerNorm →" if has_norm else "=")
        if has_norm:
            titles["input"] = "LayerNorm(sum) = layer input"
            extras["embed_norm"] = True
        return extras

    def shown_data(self) -> dict:
        return dict(self._data)
