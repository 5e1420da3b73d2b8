"""Add & norm n of a layer as plain data: the three matrices in the order the data flows, the per-token
statistics before and after the norm, and the sentences around them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present import words
from attnlab.present.facts import (
    array,
    layer_name,
    layer_side,
    missing,
    missing_message,
    norm_placement,
    residual_on,
    row_labels,
    sublayer_kind,
    sublayer_output,
)
from attnlab.present.formulas import addnorm_texts, norm_word
from attnlab.present.position_range import PositionWindow, first_of, read_rows, window_for, window_labels
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import BarSeries, BarsView, MatrixView, MessageView, Note, matrix_view, missing_matrix

LAYERNORM_NOTE = (
    "Per token: subtract its mean, divide by √(variance + ε), then scale by γ and shift by β. "
    "The output has mean ≈ 0 and variance ≈ 1 per token (up to the learned γ and β)."
)
RMSNORM_NOTE = (
    "Per token: divide by its RMS √(mean(x²) + ε), then scale by the learned gain g. No mean is "
    "subtracted (compare the mean bars before and after) and there is no shift."
)
RESIDUAL_OFF = "The residual connection is switched OFF: the sub-layer's output replaces x. "
NO_PLACEMENT = "This trace does not say where its LayerNorms sit (it carries no run options)."


@dataclass(frozen=True)
class AddNormView:
    norm_kind: str  # "layernorm" or "rmsnorm"
    # "pre", "post", "output" (the norm on the sub-layer's output: OLMo-2), "sandwich" or "sandwich_post" (Gemma 2)
    placement: str
    residual_off: bool
    heading: Note  # the bold line: where the norm sits, with the texts the placement/residual toggles give
    slots: tuple[MatrixView, MatrixView, MatrixView]  # left to right as the data flows
    mean: BarsView  # per-token mean before and after
    spread: BarsView  # per-token variance (LayerNorm) or RMS (RMSNorm) before and after
    note: Note
    tokens: list[str] | None
    entries: dict[str, str]  # stat ("in", "out", "mean"/"var" or "rms") -> trace entry
    resid: str  # the residual sum's entry
    sublayer: str  # the sub-layer output's entry

    kind = "addnorm"


def is_rmsnorm(trace: Trace) -> bool:
    """Whether this run's layer norms are RMSNorms (Llama, Qwen2): they record the RMS, not mean and variance."""
    return trace.config.norm == "rmsnorm"


def norm_statistics(
    trace: Trace, entry: dict[str, str], window: PositionWindow | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mean, spread) per token before the norm (as recorded) and after it (computed from the output): LayerNorm's
    spread is the variance, RMSNorm's the RMS it divides by. Each [T] float32 (the window's positions)."""
    x_out = read_rows(trace, entry["out"], window)  # [T, d]
    if "rms" in entry:  # RMSNorm records the RMS; the mean it leaves in place is computed
        mean = read_rows(trace, entry["in"], window).mean(axis=1)  # [T]
        spread = read_rows(trace, entry["rms"], window)  # [T]
        return mean, spread, x_out.mean(axis=1), np.sqrt((x_out**2).mean(axis=1))
    mean, spread = read_rows(trace, entry["mean"], window), read_rows(trace, entry["var"], window)  # [T] each
    return mean, spread, x_out.mean(axis=1), x_out.var(axis=1)


def addnorm_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> AddNormView | MessageView:
    layer, n = stage.layer or "", stage.norm or 1
    rms = is_rmsnorm(trace)
    post = stage.kind == "post_norm"  # a sandwich's norm on the sub-layer's output (Gemma 2)
    prefix = names.post_norm(layer, n) if post else names.norm(layer, n)
    entry = {stat: names.norm_entry(prefix, stat) for stat in names.norm_stats("rmsnorm" if rms else "layernorm")}
    lost = missing(trace, list(entry.values()))
    placement = "sandwich_post" if post else norm_placement(trace)
    if lost or placement is None:
        return MessageView("addnorm", missing_message("This add & norm step", lost) if lost else NO_PLACEMENT)
    side = layer_side(layer)
    window = window_for(trace, side, display.positions)  # read only the window's rows (issue 23: long inputs)
    total = window.total if window is not None else array(trace, entry["in"]).shape[0]
    labels = window_labels(row_labels(trace, side, total, vocab), window)  # decoder rows: "<s> → le"
    sub = words.sublayer_kind_words(sublayer_kind(trace, layer, n), short=True)
    where, word = layer_name(layer), norm_word(trace.config)
    residual = residual_on(trace)
    text, titles = addnorm_texts(placement, residual, sub, n, where, word)
    placements = ("pre", "post", "output", "sandwich", "sandwich_post")[
        : 2 if trace.config.sublayer_norm == "input" else 5
    ]
    toggled = tuple(addnorm_texts(p, r, sub, n, where, word)[0] for p in placements for r in (True, False))
    sub_name, resid_name = sublayer_output(trace, layer, n), names.resid(layer, n)
    # pre-norm: x | Norm(x) | x + F; on the output (OLMo-2): F(x) = the norm's input | Norm(F(x)) | x + Norm(F(x))
    flows_in = placement in ("pre", "output", "sandwich", "sandwich_post")
    order = (entry["in"], entry["out"], resid_name) if flows_in else (sub_name, entry["in"], entry["out"])
    slots = tuple(
        matrix_view(name, read_rows(trace, name, window), labels, title, first_row=first_of(window))
        if name in trace
        else missing_matrix(name, title, missing_message(title, [name]))
        for name, title in zip(order, titles, strict=True)
    )
    mean, spread, out_mean, out_spread = norm_statistics(trace, entry, window)
    legend = ("input", "output")  # of the norm (the panel's heading names it): short, in the bar charts' titles
    note = RMSNORM_NOTE if rms else LAYERNORM_NOTE
    return AddNormView(
        norm_kind="rmsnorm" if rms else "layernorm",
        placement=placement,
        residual_off=not residual,
        heading=Note(text, toggled),
        slots=(slots[0], slots[1], slots[2]),
        mean=BarsView(
            "mean per token (not subtracted)" if rms else "mean per token",
            (BarSeries(legend[0], mean), BarSeries(legend[1], out_mean)),
        ),
        spread=BarsView(
            "RMS per token" if rms else "variance per token",
            (BarSeries(legend[0], spread), BarSeries(legend[1], out_spread)),
        ),
        note=Note(RESIDUAL_OFF + note if not residual else note, (RESIDUAL_OFF + note,)),
        tokens=labels,
        entries=entry,
        resid=resid_name,
        sublayer=sub_name,
    )
