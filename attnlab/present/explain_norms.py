"""Explanations of the norms imported families add (w-norms): the QK-norm stage. Qt-free;
`explain.explanation_html` asks here first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.explain_page import page, shape_of
from attnlab.present.formulas_norms import qk_norm_formula, softcap_formula
from attnlab.present.stages import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def norms_page(stage: Stage, trace: Trace) -> str | None:
    """The page of a stage this module explains, or None."""
    if stage.kind == "qk_norm" and stage.site:
        return _qk_norm_page(stage.site, trace)
    if stage.kind == "capped" and stage.site:
        return _softcap_page(stage.site, trace)
    return None


def _softcap_page(site: str, trace: Trace) -> str:
    cfg = trace.config
    c = cfg.attn_softcap
    shape = shape_of(trace, names.capped(site))
    sentences = [
        f"This model squashes every scaled score x into (−{c:g}, {c:g}) with {c:g} · tanh(x / {c:g}) before the "
        "mask: a score much smaller than the cap passes almost unchanged, a large one can no longer run away, so "
        "no single key can take all the weight only because its score grew without bound.",
        "It is a separate step between the scaling and the mask; the fused attention kernels cannot do it, so "
        "attnlab computes these sites step by step even when it records nothing.",
    ]
    shapes = f"[{' × '.join(map(str, shape))}] (heads × queries × keys)." if shape else ""
    return page(f"Soft-capping · {words.site_full_words(site)}", softcap_formula(cfg), sentences, shapes)


def _qk_norm_page(site: str, trace: Trace) -> str:
    cfg = trace.config
    q_in, k_in = (shape_of(trace, name) for name in names.qk_norm_entries(site)[:2])
    whole = cfg.qk_norm == "whole"
    what = (
        "all of a token's query (and, with its own γ, all of its key) is divided by its root mean square before "
        "it is cut into heads, so every head of a token shares one scale"
        if whole
        else "each head's query and key vector is divided by its own root mean square, so every head's q and k "
        "have the same size before the dot product"
    )
    sentences = [
        f"This model normalises Q and K right after their projections: {what}; a learned γ then weights each "
        "number. The scores q · k can then no longer grow just because the vectors grow, which keeps the "
        "softmax from saturating in training.",
        "The norm comes before the rotary positions: the Q, K, V stage shows the normed vectors after rotation.",
        "" if trace.options.projections else "The projections are switched off in this run, so there is no QK-norm.",
    ]
    shapes = (
        f"Q [{' × '.join(map(str, q_in))}], K [{' × '.join(map(str, k_in))}] (heads × tokens × d<sub>k</sub>)."
        if q_in and k_in
        else ""
    )
    return page(f"QK-norm · {words.site_full_words(site)}", qk_norm_formula(cfg), sentences, shapes)


def local_rope_note(stage: Stage, trace: Trace) -> str:
    """For the Q, K, V stage of a model whose local layers have their own rotary base (Gemma 3): which base this
    layer turns Q and K with, as a formula ('' elsewhere, or with positions off)."""
    cfg = trace.config
    if stage.kind != "qkv" or not stage.site or not cfg.rope_local_theta or not trace.options.positional:
        return ""
    local = names.takes_window(stage.site, cfg.sliding_window_pattern)
    base = cfg.rope_local_theta if local else cfg.rope_theta
    kind = f"local (sliding window {cfg.sliding_window})" if local else "global"
    other = cfg.rope_theta if local else cfg.rope_local_theta
    return (
        f"<p style='font-family:serif'>θ<sub>p,i</sub> = p / {base:g}<sup>2i/d<sub>k</sub></sup> &nbsp; (this "
        f"{kind} layer's rotary base; the {'global' if local else 'local'} layers turn with {other:g})</p>"
    )
