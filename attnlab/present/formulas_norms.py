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
            f"W<sub>K</sub>), &nbsp; {rms}, &nbsp; mean over all {config.d_model} numbers of a token's Q (K: "
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
