"""The explanation of the QK-norm stage (kind "qk_norm", present/kinds.py): Q and K normalised right after their
projections (OLMo-2, Qwen3, Gemma 3). Its view is views/qk_norm.py. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.explain_page import DK, page, shape_of
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace


def qk_norm_formula(config: ModelConfig) -> str:
    """QK-norm with this model's group sizes and ε: over each head's d_k, or over all of Q and all of K."""
    eps = f"ε = {config.layer_norm_eps:g}"
    rms = "RMSNorm<sub>γ</sub>(x) = γ ⊙ x / √(mean(x²) + ε)"
    if config.qk_norm == "whole":
        kv = config.kv_heads * config.d_head
        return (
            f"Q̂ = RMSNorm<sub>γ<sub>q</sub></sub>(X W<sub>Q</sub>), &nbsp; K̂ = RMSNorm<sub>γ<sub>k</sub></sub>(X "
            f"W<sub>K</sub>), &nbsp; {rms}, &nbsp; mean over all {config.attn_width} numbers of a token's Q (K: "
            f"{kv}), {eps}; then the heads are split and rotated"
        )
    return (
        f"q̂<sub>h</sub> = RMSNorm<sub>γ<sub>q</sub></sub>(q<sub>h</sub>), &nbsp; k̂<sub>h</sub> = "
        f"RMSNorm<sub>γ<sub>k</sub></sub>(k<sub>h</sub>), &nbsp; {rms}, &nbsp; mean over the {DK} = "
        f"{config.d_head} numbers of each head (one γ<sub>q</sub>, one γ<sub>k</sub> of size {config.d_head} for "
        f"every head), {eps}; then rotated"
    )


def qk_norm_step(config: ModelConfig | None) -> str:
    """What the Q, K, V formula adds for a model with QK-norm ('' without)."""
    if config is None or config.qk_norm == "none":
        return ""
    over = "all of Q, all of K" if config.qk_norm == "whole" else f"each head's {DK}"
    return f" &nbsp; Q, K ← RMSNorm over {over} (QK-norm, before the rotation)"


def qk_norm_page(stage: Stage, trace: Trace) -> str:
    """The QK-norm stage: Q and K normalised right after their projections (ModelConfig.qk_norm)."""
    site, cfg = stage.site or "", trace.config
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
