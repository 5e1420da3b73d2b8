"""The output: top-k logits or next-token probabilities at one position as horizontal bars."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.stages import Stage, ViewState
from attnlab.ui.heatmap import cache_axis, elide_label, printable_label, tick_font
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.common import (
    MessageStack,
    Note,
    array,
    foreground_color,
    note_font,
    run_temperature,
)

MASK_TOKENS = ("[MASK]", "<mask>")  # BERT / DistilBERT, RoBERTa
SPECIAL_IDS_ORDER = ("<pad>", "<s>", "</s>", "<unk>")  # ids 0..3 in every attnlab tokenizer
BAR_COLOR = "#3b7dd8"
TOP_COLOR = "#ff9f1c"


def top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first (ties: lower id first)."""
    k = max(1, min(int(k), values.shape[0]))
    order = np.lexsort((np.arange(values.shape[0]), -values))
    return order[:k]


class OutputPanel(StagePanel):
    """Raw logits (kind "logits") or softmax probabilities (kind "probs") of the top-k tokens.

    Token names: the trace holds ids only, so the host may call `set_vocabulary(id_to_token)`; otherwise
    names come from the tokens seen in this run and the specials, and other ids show as "#id".
    The temperature is the one the run used (`trace.options.temperature`).
    """

    kinds = (names.LOGITS, names.PROBS)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._vocab: Callable[[int], str] | None = None
        self._title = Note(self, delta=2, bold=True)
        self._plot = pg.PlotWidget(self)
        self._plot.setMenuEnabled(False)
        self._plot.setMouseEnabled(x=False, y=False)
        self._plot.hideButtons()
        item = self._plot.getPlotItem()
        item.getViewBox().invertY(True)
        item.showGrid(x=True, alpha=0.15)
        left = item.getAxis("left")
        font = tick_font()
        font.setPointSizeF(font.pointSizeF() + 2)
        left.setTickFont(font)
        item.getAxis("bottom").setTickFont(tick_font())
        item.getAxis("bottom").enableAutoSIPrefix(False)
        for axis in ("left", "bottom"):
            cache_axis(item.getAxis(axis))
        self._x_range: tuple[float, float] | None = None
        self._bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.72)
        self._plot.addItem(self._bars)
        self._values: list[pg.TextItem] = []
        self._ticks_key: tuple | None = None
        self._note = Note(self)
        self._stack = MessageStack(self._plot, self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._note)
        self._data: dict = {}

    def set_vocabulary(self, vocab: Callable[[int], str] | Sequence[str] | None) -> None:
        """Token names for ids: a function id -> str (e.g. tokenizer.id_to_token) or a list."""
        if vocab is None or callable(vocab):
            self._vocab = vocab
        else:
            pieces = list(vocab)
            self._vocab = lambda i: pieces[i] if 0 <= i < len(pieces) else f"#{i}"
        self._ticks_key = None

    def _namer(self, trace: Trace) -> Callable[[int], str]:
        if self._vocab is not None:
            return self._vocab
        known: dict[int, str] = dict(enumerate(SPECIAL_IDS_ORDER))
        for side in names.SIDES:
            tokens_name, ids_name = names.side_entry(side, "tokens"), names.side_entry(side, "ids")
            if tokens_name in trace and ids_name in trace:
                ids = (int(i) for i in trace.numpy(ids_name))
                known.update(zip(ids, trace[tokens_name], strict=False))
        return lambda i: str(known.get(i, f"#{i}"))

    def _value_text(self, i: int) -> pg.TextItem:
        while len(self._values) <= i:
            text = pg.TextItem("", anchor=(0.0, 0.5), color=foreground_color())
            text.setFont(note_font())
            self._plot.addItem(text)
            self._values.append(text)
        return self._values[i]

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        kind = stage.kind
        if kind not in trace:
            self._data = {"message": f"The {kind} are not in this run."}
            self._stack.show_message(self._data["message"])
            return
        self._stack.show_content()
        table = array(trace, kind)  # [T, V]; the kind is the trace name (names.LOGITS or names.PROBS)
        n_pos = table.shape[0]
        position = min(max(int(view.position), -n_pos), n_pos - 1) % n_pos
        if view.position == -1:  # an encoder-only model's first [MASK], if the input has one
            position = mask_position(trace, position)
        row = table[position]  # [V]
        ids = top_k(row, view.top_k)
        values = row[ids]
        name = self._namer(trace)
        labels = [name(int(i)) for i in ids]
        self._draw_bars(values, kind)
        self._set_ticks(labels)
        for i in range(max(len(self._values), len(ids))):
            text = self._value_text(i)
            visible = i < len(ids)
            text.setVisible(visible)
            if visible:
                v = float(values[i])
                label = f" {v:.1%}" if kind == names.PROBS else f" {v:.2f}"
                if label != text.toPlainText():
                    text.setText(label)
                if (text.pos().x(), text.pos().y()) != (max(v, 0.0), i):
                    text.setPos(max(v, 0.0), i)
        temperature = run_temperature(trace)
        self._title.show_text(self._heading(trace, position, kind))
        note = self._explain(kind, len(ids), row.shape[0], temperature, labels[0])
        if names.side_entry("tgt", "tokens") not in trace:  # encoder-only: a fill-in guess, nothing is decoded
            note = note.replace("Greedy decoding picks the orange bar", "The model's best fill-in is the orange bar")
        self._note.show_text(note)
        self._data = {"kind": kind, "position": position, "ids": [int(i) for i in ids], "labels": labels,
                      "values": values, "argmax": int(ids[0]), "temperature": temperature, "row": row}

    def _heading(self, trace: Trace, position: int, kind: str) -> str:
        tgt_tokens = names.side_entry("tgt", "tokens")
        decoder = tgt_tokens in trace
        toks = trace.get(tgt_tokens if decoder else names.side_entry("src", "tokens")) or []
        here = printable_label(toks[position]) if position < len(toks) else str(position)
        what = "logits" if kind == names.LOGITS else "probabilities"
        if decoder:
            context = " ".join(printable_label(t) for t in toks[: position + 1])
            return f"Next-token {what} after “{elide_label(context, 60)}” (position {position})"
        return f"Predicted token {what} at position {position} (“{here}”)"

    @staticmethod
    def _explain(kind: str, k: int, vocab: int, temperature: float | None, best: str) -> str:
        temp = f"temperature T = {temperature:.3g}" if temperature is not None else "temperature unknown"
        if kind == names.LOGITS:
            return (f"Top {k} of {vocab} raw scores: the final vector times the output matrix, one "
                    f"number per vocabulary entry. softmax(logits / T) turns them into probabilities "
                    f"({temp}). "
                    f"The highest (orange) is “{best}”.")
        return (f"Top {k} of {vocab} probabilities = softmax(logits / T), {temp}: lower T sharpens the "
                f"distribution, higher T flattens it. Greedy decoding picks the orange bar, “{best}”.")

    def _draw_bars(self, values: np.ndarray, kind: str) -> None:
        n = len(values)
        brushes = [pg.mkBrush(TOP_COLOR if i == 0 else BAR_COLOR) for i in range(n)]
        x0 = np.minimum(values, 0.0)
        self._bars.setOpts(x0=x0, y=np.arange(n, dtype=float), width=np.abs(values), height=0.72,
                           brushes=brushes, pens=[pg.mkPen(None)] * n)
        if kind == names.PROBS:
            high = 1.0 if float(values.max(initial=0)) > 0.75 else float(values.max(initial=0)) * 1.3 + 1e-6
            pad = 0.02 * high
            x_range = (-pad, high + pad)
        else:
            lo, hi = float(min(values.min(initial=0), 0.0)), float(max(values.max(initial=0), 0.0))
            span = (hi - lo) or 1.0
            x_range = (lo - 0.05 * span, hi + 0.25 * span)
        old = self._x_range
        # keep the axis while the new bars still fit and fill most of it: a toggle that barely moves the bars
        # then redraws no axis and no grid
        if old is None or x_range[0] < old[0] or x_range[1] > old[1] or \
                (x_range[1] - x_range[0]) < 0.75 * (old[1] - old[0]):
            self._x_range = x_range
            self._plot.setXRange(*x_range, padding=0)
        self._plot.setYRange(-0.6, max(n, 1) - 0.4, padding=0)

    def _set_ticks(self, labels: list[str]) -> None:
        key = tuple(labels)
        if key == self._ticks_key:
            return
        self._ticks_key = key
        ticks = [(i, elide_label(s, 14)) for i, s in enumerate(labels)]
        self._plot.getPlotItem().getAxis("left").setTicks([ticks])

    def shown_data(self) -> dict:
        return dict(self._data)


def mask_position(trace: Trace, default: int) -> int:
    """Where a masked-LM's prediction is worth showing: the first [MASK] of an encoder-only input."""
    if "tgt.tokens" in trace or "src.tokens" not in trace:
        return default
    tokens = list(trace["src.tokens"])
    return next((i for i, t in enumerate(tokens) if t in MASK_TOKENS), default)
