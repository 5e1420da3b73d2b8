"""QK-norm at one attention site as plain data: the chosen head's projected Q and K before their RMSNorms and
after (engine/qk_norm.py records them, before rotary positions turn Q and K)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing, missing_message
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view
from attnlab.present.views.site import SiteView, token_axis


@dataclass(frozen=True)
class QKNormView:
    heading: str
    q_in: MatrixView  # [Tq, d_k]: W_Q x of the chosen head, before the norm
    q_normed: MatrixView  # [Tq, d_k]: the same after RMSNorm · γ_q
    k_in: MatrixView  # [Tk, d_k]: W_K x of the K/V head it reads
    k_normed: MatrixView
    rms: tuple[np.ndarray, np.ndarray]  # the root mean square each query row / key row was divided by [Tq], [Tk]
    note: str
    head: int
    n_heads: int
    kv_head: int

    kind = "qk_norm"


def qk_norm_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> QKNormView | MessageView:
    site = stage.site or ""
    entry = dict(zip(names.QK_NORM_STEPS, names.qk_norm_entries(site), strict=True))
    lost = missing(trace, list(entry.values()))
    if lost:
        return MessageView("qk_norm", missing_message("Q and K before and after QK-norm", lost))
    sv = SiteView(trace, site, display, vocab)
    kv_head = trace.kv_head_map[sv.head]
    whole = trace.config.qk_norm == "whole"
    eps = trace.config.layer_norm_eps
    values = {step: array(trace, name) for step, name in entry.items()}  # [H|H_kv, T, d_k] each
    rms = (_rms(values["q_in"], sv.head, whole, eps), _rms(values["k_in"], kv_head, whole, eps))
    q_axes, k_axes = ((token_axis(side), "d_k dimension") for side in (sv.q_side, sv.k_side))
    shown = {
        step: matrix_view(
            entry[step],
            values[step][sv.head if step.startswith("q") else kv_head],  # [T, d_k]
            sv.rows if step.startswith("q") else sv.cols,
            title,
            axes=q_axes if step.startswith("q") else k_axes,
        )
        for step, title in (
            ("q_in", "Q = x W_Q (before the norm)"),
            ("q_normed", "RMSNorm(Q) · γ_q"),
            ("k_in", "K = x W_K (before the norm)"),
            ("k_normed", "RMSNorm(K) · γ_k"),
        )
    }
    over = (
        f"all {values['q_in'].shape[0] * values['q_in'].shape[2]} numbers of a token's Q (and all "
        f"{values['k_in'].shape[0] * values['k_in'].shape[2]} of its K)"
        if whole
        else f"the {values['q_in'].shape[2]} numbers of each head"
    )
    note = (
        f"Each row is divided by its root mean square over {over}, then multiplied by the learned γ; rotary "
        f"positions turn the result (the Q, K, V stage). RMS of this head's query rows: "
        f"{rms[0].min():.2f} … {rms[0].max():.2f}; key rows: {rms[1].min():.2f} … {rms[1].max():.2f}."
    )
    heading = f"QK-norm · {sv.name} · {sv.head_text}"
    return QKNormView(
        heading,
        shown["q_in"],
        shown["q_normed"],
        shown["k_in"],
        shown["k_normed"],
        rms,
        note,
        sv.head,
        sv.n_heads,
        kv_head,
    )


def _rms(x: np.ndarray, head: int, whole: bool, eps: float) -> np.ndarray:
    """x [H, T, d_k] -> [T]: sqrt(mean(x²) + eps) over one head's numbers, or over every head's ("whole")."""
    squares = x.astype(np.float64) ** 2  # [H, T, d_k]
    mean = squares.mean(axis=(0, 2)) if whole else squares[head].mean(axis=-1)  # [T]
    return np.sqrt(mean + eps)
