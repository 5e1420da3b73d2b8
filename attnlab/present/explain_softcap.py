"""The explanation of the soft-capped scores (kind "capped", present/kinds.py): every scaled score squashed into
(−c, c) by c · tanh(x / c) before the mask (Gemma 2's attn_logit_softcapping). Its view is the one-head map of
views/attention.py. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.explain_page import page, shape_of
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace


def softcap_formula(config: ModelConfig) -> str:
    c = f"{config.attn_softcap:g}"
    return (
        f"S<sub>cap</sub> = c · tanh(S′ / c), &nbsp; c = attn_logit_softcapping = {c}: &nbsp; every score is "
        f"squashed into (−{c}, {c}), nearly unchanged where |S′| ≪ {c}; then the mask is added"
    )


def final_softcap_formula(config: ModelConfig) -> str:
    c = f"{config.final_softcap:g}"
    return f"<br>logits = c · tanh(z / c), &nbsp; c = final_logit_softcapping = {c} (z: the projection above)"


def softcap_page(stage: Stage, trace: Trace) -> str:
    """The soft-capped scores of a site (kind "capped"): c · tanh(x / c) before the mask (Gemma 2)."""
    site, cfg = stage.site or "", trace.config
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
