"""The explanation of the QK-norm stage (kind "qk_norm", present/kinds.py): Q and K normalised right after their
projections (OLMo-2, Qwen3, Gemma 3). Its view is views/qk_norm.py. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.explain_page import page, shape_of
from attnlab.present.formulas_norms import qk_norm_formula
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


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
