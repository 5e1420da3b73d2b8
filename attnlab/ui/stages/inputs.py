"""Input stages: tokenization (chips), token embeddings, and the layer input (embedding + position); the
positional-encoding stage is in positional.py."""

from __future__ import annotations

import numpy as np
from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from attnlab.present.engine_api import Trace, names
from attnlab.present.stages import Stage, ViewState
from attnlab.ui.heatmap import printable_label
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    SPECIAL_TOKENS,
    MessageStack,
    Note,
    PanelHeatmap,
    array,
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
        self._note = Note(self, reserve_lines=3)
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
            if matrix is None and part == "pos":  # what is added is zero: show the zeros, and say so above them
                # (the map stays up: swapping it for a message and back re-laid out and repainted the panel)
                matrix, titles[part] = np.zeros_like(x), "position off: + 0"
            if matrix is None:  # the box stays in place (no re-layout on the toggle) and says why it is empty
                self._maps[part].clear("not in this run")
                continue
            self._maps[part].draw(
                matrix, labels, None, title=titles[part], colormap=view.colormap, levels=(-bound, bound)
            )
        has_pos = parts["pos"] is not None
        self._data = {**self._maps["input"].record, "embed": parts["embed"], "pos": parts["pos"], **extras}
        if extras:
            self._note.show_text(
                (
                    "Token embedding + position + token type (segment: 0 for sentence A, 1 for sentence B)"
                    if "type" in extras
                    else "Token embedding + position"
                )
                + (
                    ", then the embedding LayerNorm: its output is what the first layer reads."
                    if "embed_norm" in extras
                    else ": this sum is what the first layer reads."
                )
            )
        else:  # the positional toggle switches between these two: room for the taller from the start
            with_pos = (
                f"Each token's vector is its embedding plus the encoding of its position "
                f"({x.shape[0]} × {x.shape[1]} each, one shared colour scale). This sum is "
                f"what the first layer reads."
            )
            without_pos = (
                "No positional table is added here, so the layer input equals the "
                "embedding: without position information, reordering the words changes "
                "nothing (unless rotary encoding adds position inside attention)."
            )
            self._note.show_text(with_pos if has_pos else without_pos, alternatives=(with_pos, without_pos))

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
