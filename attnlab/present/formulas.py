"""Formulas and labels derived from the model's config and the run's toggles (Qt-free).

Every formula the explanations, panel titles and schematic show comes from here, read off `trace.config`
(positional kind and layout, activation, norm kind, FFN kind, biases) and `trace.options` (norm placement,
scaling, residual, positions), so a model with learned positions and GELU never shows the sinusoidal table
or ReLU, and a run with scaling off never claims to divide by √dₖ. HTML fragments (QLabel rich text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.present import words

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

DM, DK = "d<sub>model</sub>", "d<sub>k</sub>"

# activation -> (name people read, formula of z)
ACTIVATIONS = {
    "relu": ("ReLU", "ReLU(z) = max(0, z)"),
    "gelu": ("GELU", "GELU(z) = z · Φ(z), Φ the standard normal CDF"),
    "gelu_tanh": ("GELU (tanh approximation)", "GELU(z) ≈ ½ z (1 + tanh(√(2/π) (z + 0.044715 z³)))"),
    "silu": ("SiLU (swish)", "SiLU(z) = z · σ(z) = z / (1 + e<sup>−z</sup>)"),
}
ACT_SYMBOL = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU", "silu": "SiLU"}

SINUSOIDAL = {
    "interleaved": (
        "PE(pos, 2i) = sin(pos / 10000<sup>2i/d</sup>) &nbsp; PE(pos, 2i+1) = cos(pos / 10000<sup>2i/d</sup>)"
    ),
    "marian": (
        "PE(pos, i) = sin(pos / 10000<sup>2i/d</sup>), &nbsp; "
        "PE(pos, d/2 + i) = cos(pos / 10000<sup>2i/d</sup>) &nbsp; (sines first, then cosines)"
    ),
}
LEARNED = "P = W<sub>pos</sub>[pos] &nbsp; (a trained table, one row of {dm} numbers per position)"
ROTARY = (
    "q′ = R<sub>pos</sub> q, &nbsp; k′ = R<sub>pos</sub> k: each pair of dimensions is rotated by the angle "
    "pos · θ<sup>−2i/d<sub>k</sub></sup>"
)


def pe_kind(config: ModelConfig, options: RunOptions) -> str:
    """What this run does about positions: 'sinusoidal', 'learned', 'rotary' or 'none' (off or absent)."""
    if not options.positional:
        return "none"
    return config.positional


def pe_formula(config: ModelConfig, options: RunOptions) -> str:
    kind = pe_kind(config, options)
    if kind == "sinusoidal":
        return SINUSOIDAL.get(config.sinusoidal_layout, SINUSOIDAL["interleaved"])
    if kind == "learned":
        return LEARNED.format(dm=DM)
    if kind == "rotary":
        return ROTARY
    return ""


def embed_formula(config: ModelConfig) -> str:
    scaled = config.scale_embedding
    return f"x<sub>t</sub> = E[id<sub>t</sub>]{' · √' + DM if scaled else ''} &nbsp; (E: vocabulary × {DM})"


def input_formula(config: ModelConfig, options: RunOptions) -> str:
    kind = pe_kind(config, options)
    if kind in ("sinusoidal", "learned"):
        return f"X = Embedding + {'PE' if kind == 'sinusoidal' else 'P (learned positions)'}"
    return "X = Embedding" + (" &nbsp; (positions enter later, by rotating Q and K)" if kind == "rotary" else "")


# ---- attention ------------------------------------------------------------------------------------------
def scores_over(scale: bool) -> str:
    """'Q Kᵀ / √dₖ' with scaling on, 'Q Kᵀ' with it off (HTML)."""
    return f"Q Kᵀ / √{DK}" if scale else "Q Kᵀ"


def scaled_formula(scale: bool) -> str:
    return f"S′ = Q Kᵀ / √{DK}" if scale else "S′ = S = Q Kᵀ &nbsp; (÷√d<sub>k</sub> switched off)"


def masked_formula(scale: bool) -> str:
    return f"S″ = {scores_over(scale)} + M"


def weights_formula(scale: bool) -> str:
    return f"A = softmax({scores_over(scale)} + M), row by row"


def scaled_title(scale: bool) -> str:
    """The plain-text title of the ÷√dₖ stage and map."""
    return "QKᵀ / √dₖ" if scale else "÷ √dₖ switched off (= QKᵀ)"


def qkv_formula(rotary: bool) -> str:
    base = "Q = X W<sub>Q</sub> &nbsp; K = X<sub>kv</sub> W<sub>K</sub> &nbsp; V = X<sub>kv</sub> W<sub>V</sub>"
    return base + (" &nbsp; then Q, K rotated by position (RoPE)" if rotary else "")


# ---- norms and feed-forward -----------------------------------------------------------------------------
def norm_word(config: ModelConfig) -> str:
    """'LayerNorm' or 'RMSNorm'."""
    return words.word("rmsnorm") if config.norm == "rmsnorm" else words.word("norm")


def norm_formula(config: ModelConfig) -> str:
    if config.norm == "rmsnorm":
        return f"RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε), &nbsp; over the {DM} features of one token (no centring)"
    beta = " + β" if config.norm_bias else ""
    return f"LN(x) = γ ⊙ (x − μ) / √(σ² + ε){beta}, &nbsp; μ, σ² over the {DM} features of one token"


def block_formula(placement: str, residual: bool, norm: str = "LN") -> str:
    """Where the norm and the add sit: 'y = LN(x + F(x))', 'y = x + F(LN(x))', without the add when off."""
    if placement == "pre":
        return f"y = x + F({norm}(x))" if residual else f"y = F({norm}(x)) &nbsp; (residual off: no + x)"
    return f"y = {norm}(x + F(x))" if residual else f"y = {norm}(F(x)) &nbsp; (residual off: no + x)"


def addnorm_title(config: ModelConfig, residual: bool, n: int) -> str:
    """'add & LayerNorm 1', 'add & RMSNorm 1', or 'LayerNorm 1 (no add: residual off)' when the residual is off."""
    word = norm_word(config)
    return f"add & {word} {n}" if residual else f"{word} {n} (no add: residual off)"


def activation(config: ModelConfig) -> tuple[str, str]:
    """(name, formula) of the FFN's non-linearity."""
    return ACTIVATIONS.get(config.activation, ACTIVATIONS["relu"])


def ffn_formula(config: ModelConfig) -> str:
    kind = config.activation
    act = ACT_SYMBOL.get(kind, kind)
    b = config.has_bias("ffn")
    b1, b2 = (" + b<sub>1</sub>", " + b<sub>2</sub>") if b else ("", "")
    if config.ffn == "gated":
        return f"FFN(x) = ({act}(x W<sub>gate</sub>) ⊙ x W<sub>up</sub>) W<sub>down</sub>{' + b' if b else ''}"
    inner = f"x W<sub>1</sub>{b1}"
    return f"FFN(x) = {'max(0, ' + inner + ')' if kind == 'relu' else act + '(' + inner + ')'} W<sub>2</sub>{b2}"


def logits_formula(config: ModelConfig) -> str:
    tied = config.tie_output
    w = "E<sup>T</sup>" if tied else "W<sub>out</sub>"
    bias = " + b" if config.has_bias("logits") else ""
    return f"logits = h {w}{bias}"


def of_trace(trace: Trace) -> tuple[ModelConfig, RunOptions]:
    return trace.config, trace.options


def addnorm_texts(
    placement: str, residual: bool, sub: str, n: int, where: str, word: str = "LayerNorm"
) -> tuple[str, tuple[str, str, str]]:
    """The add & norm panel's sentence and its three slot titles, left to right as the data flows.
    post-norm: F(x) | x + F(x) | Norm(x + F(x));  pre-norm: x | Norm(x) | x + F(Norm(x)); without the "+ x"
    when the residual is off, so no title claims an add that did not happen."""
    if placement == "pre":
        out = f"x + {sub}({word}(x))" if residual else f"{sub}({word}(x)) (residual off: no + x)"
        text = f"Pre-norm: {word} {n} of {where} comes BEFORE the {sub}: {out}. " + (
            "The norm tidies what the sub-layer reads, while x itself travels on unchanged." if residual else ""
        )
        return text, ("x (block input)", f"{word}(x) → {sub}", out)
    summed = "x + F(x) (residual sum)" if residual else "F(x) (residual off: nothing added)"
    out = f"{word}(x + F(x))" if residual else f"{word}(F(x))"
    text = f"Post-norm: {word} {n} of {where} comes AFTER the " + (
        f"residual sum: {word}(x + {sub}(x)), as in the original Transformer."
        if residual
        else f"{sub}, with nothing added (residual off): {word}({sub}(x))."
    )
    return text, (f"{sub} output F(x)", summed, out)
