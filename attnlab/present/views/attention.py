"""Attention stages of one site as plain data: Q/K/V of the chosen head, the score maps (raw, ÷√dₖ, masked,
softmax weights) and the mask."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present import disentangled, relative_key, trained_scale, words
from attnlab.present.chat_marks import self_attention_spans
from attnlab.present.explain_qkv import gqa_text
from attnlab.present.facts import array, missing, missing_message, scaling_on, score_levels
from attnlab.present.formulas import scaled_title
from attnlab.present.stages import Stage, ViewState
from attnlab.present.timeline import shown_rows
from attnlab.present.views.long_attention import long_matrix, long_note
from attnlab.present.views.long_map import is_long, map_shape
from attnlab.present.views.model import MatrixView, MessageView, matrix_view
from attnlab.present.views.site import SiteView, blocked_cells, token_axis
from attnlab.present.weight_scale import weight_scale

MAP_TEXT = {
    "scores": (
        "QKᵀ scores",
        "Cell (i, j) = qᵢ · kⱼ, the dot product of query i with key j: large when they point the same way.",
    ),
    "scaled": ("QKᵀ / √dₖ", ""),
    "capped": (
        "soft-capped scores",
        "Each score x becomes c · tanh(x / c): nearly x where |x| is small next to c, never beyond ±c.",
    ),
    "biased": (
        "scaled scores + position bias",
        "Each head's position bias B added to the scores of the step before; the mask is added to these next.",
    ),
    "masked": ("masked scores", "The mask adds 0 where a query may look and −∞ where it may not (hatched)."),
    "weights": (
        "attention weights",
        "softmax turns each row into weights between 0 and 1 that sum to 1: how "
        "much each query token takes from each key token.",
    ),
}
MASK_HINT = "Click a cell to block or unblock that query → key pair; the model runs again."


@dataclass(frozen=True)
class MapView:
    """One [Tq, Tk] map of the chosen head (scores, ÷√dₖ, masked, weights) or the mask."""

    kind: str
    matrix: MatrixView
    note: str
    head: int
    n_heads: int
    hint: str = ""  # the mask's call to click
    blocked: np.ndarray | None = None  # the mask: bool [Tq, Tk]
    additive: np.ndarray | None = None  # the mask: its 0 / −∞ values [Tq, Tk]


@dataclass(frozen=True)
class QKVView:
    heading: str
    q: MatrixView  # [Tq, d_k] of the chosen head
    k: MatrixView  # [Tk, d_k] of the K/V head it reads
    v: MatrixView
    kv_head: int
    sharing: str  # grouped-query attention: how the Q heads share K/V heads ("" without GQA)
    note: str
    head: int
    n_heads: int

    kind = "qkv"


def map_title(trace: Trace, kind: str) -> str:
    """The map's title; the ÷√dₖ map says when scaling is switched off instead of claiming QKᵀ/√dₖ."""
    deberta = disentangled.map_title(trace, kind) or relative_key.map_title(trace, kind)  # a sum of terms
    if deberta:
        return deberta
    if kind == "scaled" and trained_scale.unscaled(trace.config):
        return trained_scale.TITLE
    return scaled_title(scaling_on(trace), None, trace.config) if kind == "scaled" else MAP_TEXT[kind][0]


def map_view(
    trace: Trace,
    stage: Stage,
    display: ViewState,
    vocab: Callable[[int], str] | None = None,
    *,
    defer: bool = False,
) -> MapView | MessageView:
    """One head's map of the stage's kind. `defer`: a long map not read before is left for the widget to read
    off the GUI thread (long_attention.long_matrix)."""
    site, kind = stage.site or "", stage.kind
    wanted = [names.site_entry(site, kind), names.site_entry(site, "weights")]
    lost = missing(trace, wanted)
    if lost:
        return MessageView(kind, missing_message(MAP_TEXT[kind][0], lost))
    sv = SiteView(trace, site, display, vocab)
    title = f"{map_title(trace, kind)} · {sv.name} · {sv.head_text}"
    if is_long(map_shape(trace, names.site_entry(site, kind))):  # read in pieces (long_attention.py)
        long = long_matrix(trace, sv, kind, title, display, defer)
        return MapView(kind, long, long_note(MAP_TEXT[kind][1], (sv.tq, sv.tk)), sv.head, sv.n_heads)
    matrix = array(trace, names.site_entry(site, kind))[sv.head]  # [Tq, Tk]
    blocked = blocked_cells(trace, site)
    rows, cols = sv.rows, sv.cols
    if (n := shown_rows(site, matrix.shape[0], display.upto)) is not None:  # the generation timeline's step
        keys = n if site.endswith(".self") else matrix.shape[1]  # a self-attention's later keys came later too
        matrix, rows, cols = matrix[:n, :keys], rows[:n] if rows else rows, cols[:keys] if cols else cols
        blocked = blocked[:n, :keys] if blocked is not None else None
    weights = kind == "weights"  # 0 … 1, or a percentile scale when a map of many keys has small weights
    levels, scale = (
        weight_scale(matrix, sv.tk) if weights else (score_levels(trace, site, sv.head, display.colour_scale), "")
    )
    shown = matrix_view(
        names.site_entry(site, kind),
        matrix,
        rows,
        title,
        cols=cols,
        masked=blocked,
        levels=levels,
        symmetric=None if kind == "weights" else True,
        axes=(sv.query_axis, sv.key_axis),
    )
    if scale:
        shown = replace(shown, scale_label=scale)
    if spans := self_attention_spans(trace):  # a conversation: its turns marked along both axes
        shown = replace(shown, spans=spans)
    return MapView(kind, shown, map_note(trace, site, kind, matrix, blocked), sv.head, sv.n_heads)


def map_note(trace: Trace, site: str, kind: str, matrix: np.ndarray, blocked: np.ndarray | None) -> str:
    """The sentence under a score map: what a cell is, the range of the allowed values, the rows' sums."""
    valid = matrix[~blocked] if blocked is not None else matrix.ravel()
    valid = valid[np.isfinite(valid)]
    spread = f" Allowed values range from {valid.min():.2f} to {valid.max():.2f}." if valid.size else ""
    text = MAP_TEXT[kind][1]
    if kind == "scores" and blocked is not None:
        text += " Hatched cells will be blocked by the mask two steps later."
    if kind == "scaled":
        q_name = names.site_entry(site, "q")
        dk = int(trace[q_name].shape[-1]) if q_name in trace else 0
        if trained_scale.unscaled(trace.config):
            text = trained_scale.NOTE
        elif not scaling_on(trace):
            text = (
                "Scaling is switched OFF: these are the raw scores. With large dₖ the softmax then "
                "tends to put almost all weight on one key."
            )
        else:
            text = (
                f"Every score is divided by √dₖ = √{dk} ≈ {math.sqrt(dk):.2f}, so the spread of the "
                f"scores does not grow with the head size and the softmax stays soft."
            )
    text = disentangled.map_text(trace, site, kind) or relative_key.map_text(trace, kind) or text  # sums
    if kind == "weights":
        row_sums = np.nansum(matrix, axis=1)
        return text + f" Row sums: {row_sums.min():.3f} … {row_sums.max():.3f}."
    return text + spread


def mask_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> MapView | MessageView:
    """The additive mask as allowed (coloured) and blocked (hatched) cells; the widget draws all-ones."""
    site = stage.site or ""
    name = names.site_entry(site, "mask")
    if missing(trace, [name]):
        return MessageView("mask", missing_message("The mask", [name]))
    sv = SiteView(trace, site, display, vocab)
    if is_long(map_shape(trace, name)):
        return long_mask_view(trace, sv, display)
    additive = array(trace, name)  # [Tq, Tk], 0 or -inf
    blocked = np.isneginf(additive)  # [Tq, Tk]
    square = blocked.shape[0] == blocked.shape[1] and blocked.shape[0] > 1
    causal = sv.q_side == sv.k_side and bool(np.all(blocked[np.triu_indices_from(blocked, 1)])) if square else False
    what = " The upper triangle is blocked: the causal (look-ahead) mask." if causal else ""
    note = (
        f"Coloured = allowed (adds 0 to the score); hatched = blocked (adds −∞, so its "
        f"weight becomes exactly 0). {int(blocked.sum())} of {blocked.size} cells blocked.{what}"
    )
    allowed = matrix_view(
        name,
        np.ones_like(additive),
        sv.rows,
        f"mask · {sv.name}",
        cols=sv.cols,
        masked=blocked,
        levels=(0.0, 1.0),
        symmetric=None,
        axes=(sv.query_axis, sv.key_axis),
    )
    return MapView("mask", allowed, note, sv.head, sv.n_heads, MASK_HINT, blocked, additive)


def long_mask_view(trace: Trace, sv: SiteView, display: ViewState) -> MapView:
    """The mask of a long input: the same sentence, the allowed cells read in pieces (long_attention.py)."""
    additive = array(trace, names.site_entry(sv.site, "mask"))  # [Tq, Tk], the stored entry (no copy on the CPU)
    blocked = np.isneginf(additive)  # [Tq, Tk]
    causal = sv.q_side == sv.k_side and not np.triu(~blocked, 1).any()
    what = " The upper triangle is blocked: the causal (look-ahead) mask." if causal else ""
    note = (
        f"Coloured = allowed (adds 0 to the score); hatched = blocked (adds −∞, so its "
        f"weight becomes exactly 0). {int(blocked.sum())} of {blocked.size} cells blocked.{what}"
    )
    allowed = long_matrix(trace, sv, "mask", f"mask · {sv.name}", display)
    return MapView("mask", allowed, long_note(note, blocked.shape), sv.head, sv.n_heads, MASK_HINT, blocked, additive)


def qkv_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> QKVView | MessageView:
    """Queries of the chosen head, keys and values of the K/V head it reads (grouped-query attention shares them)."""
    site = stage.site or ""
    entry = {p: names.site_entry(site, p) for p in ("q", "k", "v")}
    lost = missing(trace, list(entry.values()))
    if lost:
        return MessageView("qkv", missing_message("Q, K and V", lost))
    sv = SiteView(trace, site, display, vocab)
    kv_head = trace.kv_head_map[sv.head]  # GQA: a shared K/V head
    grouped = trace.n_kv_heads < trace.n_heads
    kv = f", K/V head {kv_head + 1}" if grouped else ""
    q_axes, kv_axes = ((token_axis(side), "d_k dimension") for side in (sv.q_side, sv.k_side))
    q = matrix_view(entry["q"], array(trace, entry["q"])[sv.head], sv.rows, "Q (queries)", axes=q_axes)  # [Tq, d_k]
    k, v = (
        matrix_view(entry[p], array(trace, entry[p])[kv_head], sv.cols, title, axes=kv_axes)  # [Tk, d_k]
        for p, title in (("k", f"K (keys{kv})"), ("v", f"V (values{kv})"))
    )
    source = (
        "Q from the decoder, K and V from the encoder output"
        if sv.q_side != sv.k_side
        else "all three from the same tokens"
    )
    sharing = gqa_text(trace.n_heads, trace.n_kv_heads) if grouped else ""
    head_words = words.head_words(sv.head)
    note = f"{sv.name}: every token's vector is multiplied by W_Q, W_K and W_V ({source}). " + (
        f"Shown: {head_words}'s slice, d_k = {q.matrix.shape[1]} numbers per token."
    )
    if grouped:
        note += (
            f" Grouped-query attention: {trace.n_kv_heads} K/V heads for {trace.n_heads} Q "
            f"heads — {sharing} ({head_words} reads K/V head {kv_head + 1})."
        )
    heading = f"Q, K, V · {sv.name} · {sv.head_text}"
    return QKVView(heading, q, k, v, kv_head, sharing, note, sv.head, sv.n_heads)
