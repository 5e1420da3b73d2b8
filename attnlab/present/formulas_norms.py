"""Formulas of the norms imported families add (w-norms): QK-norm and the norm on a sub-layer's output, with
the model's own sizes and ε. Qt-free; HTML fragments like present/formulas.py's (which reads these)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig

DK = "d<sub>k</sub>"


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


def output_block_formula(residual: bool, norm: str = "LN") -> str:
    """The norm on the sub-layer's output (OLMo-2): y = x + Norm(F(x)); without the add when the residual is off."""
    if residual:
        return f"y = x + {norm}(F(x)) &nbsp; (the norm on the sub-layer's output, before the add; no norm before F)"
    return f"y = {norm}(F(x)) &nbsp; (residual off: no + x)"


def output_addnorm_texts(residual: bool, sub: str, n: int, where: str, word: str) -> tuple[str, tuple[str, str, str]]:
    """The add & norm panel's sentence and slot titles for a norm on the sub-layer's output, left to right as the
    data flows: F(x) | Norm(F(x)) | x + Norm(F(x))."""
    out = f"x + {word}({sub}(x))" if residual else f"{word}({sub}(x)) (residual off: no + x)"
    text = f"Norm on the output: {word} {n} of {where} comes AFTER the {sub} and BEFORE the add: {out}. " + (
        "The sub-layer reads x as it is; only what it adds to the residual stream is normalised." if residual else ""
    )
    return text, (f"{sub} output F(x)", f"{word}(F(x))", out)


def output_where(sub: str, word: str, residual: bool) -> str:
    """The add & norm page's sentence on where a norm on the sub-layer's output sits (OLMo-2)."""
    return f"The norm sits on the {sub}'s output in this run (as OLMo-2 was trained): " + (
        f"x + {word}({sub}(x)). Nothing normalises what the {sub} reads; its output is normalised before it is "
        "added, so the residual stream grows by a vector of controlled size."
        if residual
        else f"{word}({sub}(x))."
    )


# ---- Gemma 2: the scaling by query_pre_attn_scalar, soft-capping, the sandwich --------------------------------
def root_text(config: ModelConfig | None) -> str:
    """What the scores are divided by: '√dₖ', or '√s' with s = query_pre_attn_scalar (HTML)."""
    if config is not None and config.query_scale_dim:
        return f"√{config.query_scale_dim:g}"
    return f"√{DK}"


def scaled_expression(scale: bool, config: ModelConfig | None) -> str:
    """The scores as the mask finds them: Q Kᵀ / √dₖ (or / √s), soft-capped c · tanh(· / c) where the model caps."""
    scaled = f"Q Kᵀ / {root_text(config)}" if scale else "Q Kᵀ"
    if config is not None and config.attn_softcap:
        cap = f"{config.attn_softcap:g}"
        return f"{cap} · tanh(({scaled}) / {cap})"
    return scaled


def query_scale_formula(config: ModelConfig) -> str:
    """S′ = Q Kᵀ / √s with s = query_pre_attn_scalar (Gemma 2), saying it is not √dₖ."""
    s = f"{config.query_scale_dim:g}"
    return (
        f"S′ = Q Kᵀ / √s, &nbsp; s = query_pre_attn_scalar = {s} &nbsp; (not √{DK} = √{config.d_head}: the "
        f"scores are multiplied by {config.query_scale_dim**-0.5:.4g})"
    )


def query_scale_title(config: ModelConfig) -> str:
    """The ÷√dₖ stage's title when the model divides by √query_pre_attn_scalar (plain text)."""
    return f"QKᵀ / √{config.query_scale_dim:g} (query_pre_attn_scalar)"


def softcap_formula(config: ModelConfig) -> str:
    c = f"{config.attn_softcap:g}"
    return (
        f"S<sub>cap</sub> = c · tanh(S′ / c), &nbsp; c = attn_logit_softcapping = {c}: &nbsp; every score is "
        f"squashed into (−{c}, {c}), nearly unchanged where |S′| ≪ {c}; then the mask is added"
    )


def final_softcap_formula(config: ModelConfig) -> str:
    c = f"{config.final_softcap:g}"
    return f"<br>logits = c · tanh(z / c), &nbsp; c = final_logit_softcapping = {c} (z: the projection above)"


def sandwich_block_formula(residual: bool, norm: str) -> str:
    """Gemma 2's sandwich: y = x + PostNorm(F(Norm(x)))."""
    inner = f"{norm}_post(F({norm}(x)))"
    return f"y = x + {inner} &nbsp; (a norm before and one after the sub-layer)" if residual else f"y = {inner}"


def sandwich_addnorm_texts(
    residual: bool, sub: str, n: int, where: str, word: str, second: bool = False
) -> tuple[str, tuple[str, str, str]]:
    """The add & norm panels of a sandwich (Gemma 2), left to right as the data flows: its first norm
    x | Norm(x) → sub-layer | x + Norm_post(F(Norm(x))), its second (`second`) F | Norm_post(F) | x + Norm_post(F)."""
    f = f"{sub}({word}(x))"
    out = f"x + {word}_post({f})" if residual else f"{word}_post({f}) (residual off: no + x)"
    if second:
        text = (
            f"Sandwich, second norm: {word}_post {n} of {where} normalises the {sub}'s output before it is added "
            f"to the residual stream: {out}."
        )
        return text, (f"{sub} output F = {f}", f"{word}_post(F)", out)
    text = (
        f"Sandwich: {word} {n} of {where} comes BEFORE the {sub}, and a second {word} (the next stage) normalises "
        f"its output before the add: {out}."
    )
    return text, ("x (block input)", f"{word}(x) → {sub}", out)


def sandwich_where(sub: str, word: str, residual: bool, second: bool) -> str:
    """The add & norm page's sentence for a sandwich's norms (Gemma 2)."""
    out = f"x + {word}_post({sub}({word}(x)))" if residual else f"{word}_post({sub}({word}(x)))"
    if second:
        return (
            f"The second norm of the sandwich: {word}_post normalises the {sub}'s output before it is added, {out}, "
            "so every sub-layer adds a vector of controlled size to the residual stream."
        )
    return f"Sandwich norms in this run (as Gemma 2 was trained): {word} before the {sub}, {word}_post after: {out}."
