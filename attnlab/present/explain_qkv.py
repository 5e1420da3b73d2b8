"""The explanation of the Q, K, V stage (kind "qkv", present/kinds.py): the page of the site step, or grouped-query
attention's where the model shares its K/V heads, with the rotary positions that enter here and the rotary base
of a model whose local layers have their own (Gemma 3). `kv_groups` / `gqa_text` tell which Q heads share each
K/V head; the Q/K/V view (views/attention.py) prints the same words. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import formulas as fm
from attnlab.present import head_width as hw
from attnlab.present import words
from attnlab.present.explain_attention import qkv_page, site_step
from attnlab.present.explain_page import model_note, page
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

_site_qkv = site_step(qkv_page)  # the Q, K, V page of every model
GQA_FORMULA = "head h reads K<sub>g(h)</sub>, V<sub>g(h)</sub>, &nbsp; g(h) = ⌊h / (H / H<sub>kv</sub>)⌋"


# ---- grouped-query attention -------------------------------------------------------------------------------
def kv_groups(n_heads: int, n_kv_heads: int) -> list[tuple[int, list[int]]]:
    """(K/V head, the Q heads that read it), 0-based: 4 Q, 2 K/V -> [(0, [0, 1]), (1, [2, 3])]."""
    groups: dict[int, list[int]] = {}
    for q, kv in enumerate(names.kv_head_map(n_heads, n_kv_heads)):
        groups.setdefault(kv, []).append(q)
    return sorted(groups.items())


def gqa_text(n_heads: int, n_kv_heads: int) -> str:
    """'K/V head 1 ← Q heads 1, 2 · K/V head 2 ← Q heads 3, 4' (1-based, for people); '' without sharing."""
    if n_kv_heads <= 0 or n_kv_heads >= n_heads:
        return ""
    return " · ".join(
        f"K/V head {kv + 1} ← Q heads {', '.join(str(q + 1) for q in qs)}" for kv, qs in kv_groups(n_heads, n_kv_heads)
    )


def is_grouped(trace: Trace) -> bool:
    return trace.n_kv_heads < trace.n_heads


def qkv_grouped_page(stage: Stage, trace: Trace) -> str:
    h, h_kv = trace.n_heads, trace.n_kv_heads
    return page(
        f"Q, K, V with grouped-query attention · {words.site_full_words(stage.site or '')}",
        GQA_FORMULA
        + fm.qk_norm_step(trace.config)
        + fm.rope_scaling_formula(trace.config if rotary_sentence(trace) else None),
        [
            f"This model has {h} query heads but only {h_kv} key/value heads: W<sub>K</sub> and "
            f"W<sub>V</sub> are {h // h_kv}× narrower than W<sub>Q</sub>, and each K/V head is shared by "
            f"{h // h_kv} consecutive Q heads (grouped-query attention, as in Llama and Qwen2). It "
            "saves memory for the key/value cache; every Q head still gets its own attention pattern.",
            gqa_text(h, h_kv) + ".",
            hw.head_width_sentence(trace.config, h),  # '' unless head_dim sets the heads' width
            rotary_sentence(trace),
        ],
        f"Q [{h} × T × d<sub>k</sub>], K and V [{h_kv} × T × d<sub>k</sub>].",
    )


def rotary_sentence(trace: Trace) -> str:
    cfg = trace.config
    if cfg.positional != "rotary" or not trace.options.positional:
        return ""
    layout = (
        "half-split: dimension i pairs with i + d<sub>k</sub>/2, as in Hugging Face Llama"
        if cfg.rotary_layout == "half"
        else "interleaved: dimensions 2i and 2i+1 form a pair"
    )
    return (
        f"Positions enter here, not at the input: Q and K are rotated by rotary position encoding (RoPE, "
        f"{layout}; base {cfg.rope_theta:g}), so q·k depends on how far apart two tokens are."
        + ROPE_SCALING_WORDS.get(cfg.rope_scaling, "")
    )


ROPE_SCALING_WORDS = {  # what each rope_scaling does, for people (the formula line has the arithmetic)
    "linear": " The rotations are slowed by the scaling factor s, so s times more positions fit the angles "
    "the model was trained on.",
    "dynamic": " Its dynamic NTK scaling would raise the base only for inputs longer than the model's maximum, "
    "which attnlab never feeds it: the rotations are the plain ones.",
    "llama3": " Llama 3's scaling slows the slow-turning pairs (long wavelengths) by s, keeps the fast ones and "
    "blends those between, so long contexts reuse the angles seen in training without blurring nearby words.",
    "yarn": " YaRN slows the slow-turning pairs by s, keeps the fast ones, ramps between them, and multiplies "
    "cos and sin by an attention factor, which sharpens every score q·k by its square.",
}


def qkv_explanation(stage: Stage, trace: Trace) -> str:
    """Q, K, V: grouped-query attention's page for a model whose K/V heads are shared (it says how rotary
    positions enter), else the site step's with that note; then the rotary base of a model whose local layers
    have their own (Gemma 3)."""
    if stage.site and is_grouped(trace):
        base = qkv_grouped_page(stage, trace)
    else:
        base = _site_qkv(stage, trace) + _rotary_note(stage, trace)
    return base + local_rope_note(stage, trace)


def _rotary_note(stage: Stage, trace: Trace) -> str:
    """For a self-attention site of a rotary model: where the positions enter ('' elsewhere)."""
    if not (stage.site and names.site_kind(stage.site).endswith("self")):
        return ""
    return model_note([rotary_sentence(trace)])


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
