"""Formulas and labels derived from the model's config and the run's toggles (Qt-free).

Every formula the explanations, panel titles and schematic show comes from here, read off `trace.config`
(positional kind and layout, activation, norm kind, FFN kind, biases) and `trace.options` (norm placement,
scaling, residual, positions), so a model with learned positions and GELU never shows the sinusoidal table
or ReLU, and a run with scaling off never claims to divide by √dₖ. HTML fragments (QLabel rich text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import formulas_placement as fp
from attnlab.present import words
from attnlab.present.explain_qk_norm import qk_norm_step
from attnlab.present.explain_softcap import final_softcap_formula
from attnlab.present.formulas_placement import output_addnorm_texts, output_block_formula

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
    if kind == "learned" and config.pos_offset:  # RoBERTa, OPT, BART, mBART: position p reads row p + offset
        return LEARNED.format(dm=DM).replace("[pos]", f"[pos + {config.pos_offset}]")
    if kind == "learned":
        return LEARNED.format(dm=DM)
    if kind == "rotary":
        return ROTARY + rope_scaling_formula(config)
    return ""


def rope_scaling_formula(config: ModelConfig | None) -> str:
    """How the config's rope_scaling changes the rotation speeds ω<sub>i</sub> = θ<sup>−2i/dₖ</sup> (the
    arithmetic of engine/positional.rotary_inv_freq, with this model's numbers); '' for plain rotary."""
    return _partial_rotary(config) + _rope_scaling(config)


def _partial_rotary(config: ModelConfig | None) -> str:
    if config is None or config.rotary_fraction >= 1:
        return ""
    return (
        f"<br>partial rotary: only the first r = {config.rotary_fraction:g} · d<sub>k</sub> dimensions of each head "
        f"turn; dimensions r … d<sub>k</sub> − 1 pass unchanged"
    )


def _rope_scaling(config: ModelConfig | None) -> str:
    kind = "none" if config is None else config.rope_scaling
    if config is None or kind == "none":
        return ""
    s, n = f"{config.rope_factor:g}", config.rope_original_max_len
    w = "ω<sub>i</sub>"
    if kind == "linear":
        return f"<br>linear scaling, s = {s}: {w} = θ<sup>−2i/d<sub>k</sub></sup> / s (position p read as p / s)"
    if kind == "dynamic":
        return (
            f"<br>dynamic NTK scaling, s = {s}: θ grows only past max_position_embeddings = {config.max_len} "
            f"positions, which no input here reaches, so {w} = θ<sup>−2i/d<sub>k</sub></sup> unchanged"
        )
    if kind == "llama3":
        lo, hi = config.rope_low_freq_factor, config.rope_high_freq_factor
        return (
            f"<br>Llama 3 scaling, s = {s}, N = {n}: λ<sub>i</sub> = 2π / {w}; &nbsp; {w} kept where "
            f"λ<sub>i</sub> &lt; N / {hi:g}, {w} / s where λ<sub>i</sub> &gt; N / {lo:g}, between: "
            f"(1 − a) {w} / s + a {w}, a = (N / λ<sub>i</sub> − {lo:g}) / ({hi:g} − {lo:g})"
        )
    return (
        f"<br>YaRN scaling, s = {s}, N = {n}: {w} = r<sub>i</sub> {w} + (1 − r<sub>i</sub>) {w} / s, r<sub>i</sub> "
        f"= 1 for pairs turning more than β<sub>fast</sub> = {config.rope_beta_fast:g} times in N positions, 0 "
        f"below β<sub>slow</sub> = {config.rope_beta_slow:g}, a linear ramp between; cos and sin × "
        f"{config.rope_attention_factor:.4g}"
    )


def embed_formula(config: ModelConfig) -> str:
    scaled = config.scale_embedding
    width = f"e = {config.embed_dim}" if config.embed_dim else DM  # a factorised table (ALBERT, ELECTRA) is e wide
    return f"x<sub>t</sub> = E[id<sub>t</sub>]{' · √' + DM if scaled else ''} &nbsp; (E: vocabulary × {width})"


def input_formula(config: ModelConfig, options: RunOptions) -> str:
    """X with every term this model adds: E[id] (× √d), the positions (a table row, with its offset), the token
    type (segment) row, and the embedding LayerNorm around the sum — as engine/embedding.embed_tokens adds them."""
    kind = pe_kind(config, options)
    terms = ["E[id]" + (" · √" + DM if config.scale_embedding else "")]
    if kind == "sinusoidal":
        terms.append("PE[pos]")
    elif kind == "learned":
        terms.append(f"P[pos + {config.pos_offset}]" if config.pos_offset else "P[pos]")
    if config.type_vocab_size:
        terms.append("T[type]")
    total = " + ".join(terms)
    formula = f"X = {norm_word(config)}<sub>emb</sub>({total})" if config.embed_norm else f"X = {total}"
    notes = []
    if config.embed_norm:
        notes.append("the embedding norm")
    if config.type_vocab_size:
        notes.append("T: the token-type (segment) table, type 0 for sentence A, 1 for B")
    if kind == "learned":
        notes.append("P: learned positions")
    if kind == "rotary":
        notes.append("positions enter later, by rotating Q and K")
    return formula + (f" &nbsp; ({'; '.join(notes)})" if notes else "")


# ---- attention ------------------------------------------------------------------------------------------
def scores_over(scale: bool, config: ModelConfig | None = None) -> str:
    """'Q Kᵀ / √dₖ' with scaling on, 'Q Kᵀ' with it off (HTML); a model's √query_pre_attn_scalar and
    soft-capping (explain_softcap)."""
    return scaled_expression(scale, config)


def scaled_formula(scale: bool, layer_divisor: int | None = None, config: ModelConfig | None = None) -> str:
    """S′ = Q Kᵀ / √dₖ; with `layer_divisor` (GPT-2's scale_attn_by_inverse_layer_idx) layer l is divided by
    l + 1 too."""
    if not scale:
        return "S′ = S = Q Kᵀ &nbsp; (÷√d<sub>k</sub> switched off)"
    if config is not None and config.query_scale_dim:  # Gemma 2: ÷ √query_pre_attn_scalar
        return query_scale_formula(config)
    if layer_divisor is not None:
        return f"S′ = Q Kᵀ / (√{DK} · (l + 1)) = Q Kᵀ / (√{DK} · {layer_divisor}) &nbsp; (inverse layer scaling)"
    return f"S′ = Q Kᵀ / √{DK}"


def layer_divisor(config: ModelConfig, site: str) -> int | None:
    """l + 1 for a decoder self-attention site of a model with GPT-2's scale_attn_by_inverse_layer_idx, else
    None (engine/layers.make_attention gives layer l the same divisor)."""
    if not config.attn_scale_inverse_layer or not names.is_site(site):
        return None
    stack, index, kind = names.split_site(site)
    return index + 1 if stack == "dec" and kind == "self" else None


def sliding_window(config: ModelConfig, site: str) -> int:
    """The sliding window W of a site (Mistral's decoder self-attention), 0 for none (engine/masks.MaskBuilder
    applies the same)."""
    if not config.sliding_window:
        return 0
    return config.sliding_window if names.takes_window(site, config.sliding_window_pattern) else 0


def mask_formula(window: int = 0, causal: bool = True) -> str:
    """The mask stage's formula: 0 or −∞; with a sliding window W, the band it allows."""
    if not window:
        return "M<sub>ij</sub> = 0 (allowed) or −∞ (blocked), added before the softmax"
    allowed = "j ≤ i and i − j &lt; W" if causal else "i − j &lt; W"
    return f"M<sub>ij</sub> = 0 if {allowed} (sliding window W = {window}), else −∞; added before the softmax"


def masked_formula(scale: bool, config: ModelConfig | None = None) -> str:
    return f"S″ = {scores_over(scale, config)} + M"


def weights_formula(scale: bool, config: ModelConfig | None = None) -> str:
    return f"A = softmax({scores_over(scale, config)} + M), row by row"


def scaled_title(scale: bool, layer_divisor: int | None = None, config: ModelConfig | None = None) -> str:
    """The plain-text title of the ÷√dₖ stage and map (÷ √dₖ · (l+1) under inverse layer scaling)."""
    if not scale:
        return "÷ √dₖ switched off (= QKᵀ)"
    if config is not None and config.query_scale_dim:  # Gemma 2: ÷ √query_pre_attn_scalar
        return query_scale_title(config)
    return "QKᵀ / √dₖ" if layer_divisor is None else f"QKᵀ / (√dₖ · {layer_divisor})"


def qkv_formula(rotary: bool, config: ModelConfig | None = None, projections: bool = True) -> str:
    """Q, K, V from X, with the biases the config has (b_Q, b_K, b_V); with `rotary`, the rotation of Q and K,
    and the config's rope scaling when it has one; `projections` off: Q = X, K = V = X_kv."""
    if not projections:
        base = (
            "Q = X &nbsp; K = V = X<sub>kv</sub> &nbsp; "
            " (projections off: no W<sub>Q</sub>, W<sub>K</sub>, W<sub>V</sub>)"
        )
    else:
        b = config is not None and config.has_bias("qkv")
        q, k, v = ((f" + b<sub>{m}</sub>" if b else "") for m in "QKV")
        base = (
            f"Q = X W<sub>Q</sub>{q} &nbsp; K = X<sub>kv</sub> W<sub>K</sub>{k} &nbsp; "
            f"V = X<sub>kv</sub> W<sub>V</sub>{v}"
        )
    base += qk_norm_step(config)  # QK-norm after the projections
    return base + (" &nbsp; then Q, K rotated by position (RoPE)" + rope_scaling_formula(config) if rotary else "")


def out_projection_formula(config: ModelConfig | None = None, projections: bool = True) -> str:
    """Attention(X) = Concat(heads) W_O (+ b_O when the model has that bias); the concat itself with the
    projections off."""
    if not projections:
        return "Attention(X) = Concat(heads) &nbsp; (projections off: no W<sub>O</sub>)"
    bias = " + b<sub>O</sub>" if config is not None and config.has_bias("attn_out") else ""
    return f"Attention(X) = Concat(heads) W<sub>O</sub>{bias}"


# ---- norms and feed-forward -----------------------------------------------------------------------------
def norm_word(config: ModelConfig) -> str:
    """'LayerNorm' or 'RMSNorm'."""
    return words.word("rmsnorm") if config.norm == "rmsnorm" else words.word("norm")


def norm_formula(config: ModelConfig) -> str:
    if config.norm == "rmsnorm":
        return f"RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε), &nbsp; over the {DM} features of one token (no centring)"
    beta = " + β" if config.norm_bias else ""
    if not config.norm_affine:
        return (
            f"LN(x) = (x − μ) / √(σ² + ε), &nbsp; μ, σ² over the {DM} features of one token "
            "(non-parametric: no γ, no β is learned)"
        )
    return f"LN(x) = γ ⊙ (x − μ) / √(σ² + ε){beta}, &nbsp; μ, σ² over the {DM} features of one token"


def block_formula(
    placement: str, residual: bool, norm: str = "LN", parallel: bool = False, shared: bool = False
) -> str:
    """Where the norm and the add sit: 'y = LN(x + F(x))', 'y = x + F(LN(x))', without the add when off;
    `parallel` (GPT-NeoX's parallel residual): both sub-layers read the same x; `shared` (Phi): through one norm."""
    if parallel and placement == "pre":
        x = "x + " if residual else ""
        if shared:
            return (
                f"y = {x}Attn({norm}(x)) + FFN({norm}(x)) &nbsp; (parallel, one {norm} shared by both; add & norm "
                "1 shows x + Attn, 2 adds the FFN)"
            )
        return (
            f"y = {x}Attn({norm}<sub>1</sub>(x)) + FFN({norm}<sub>2</sub>(x)) &nbsp; (parallel residual: both "
            "read the same x; add & norm 1 shows x + Attn, 2 adds the FFN)"
        )
    if placement == "output":  # OLMo-2: the norm on the sub-layer's output
        return output_block_formula(residual, norm)
    if placement == "sandwich":  # Gemma 2: a norm before and after
        return fp.sandwich_block_formula(residual, norm)
    if placement == "pre":
        return f"y = x + F({norm}(x))" if residual else f"y = F({norm}(x)) &nbsp; (residual off: no + x)"
    return f"y = {norm}(x + F(x))" if residual else f"y = {norm}(F(x)) &nbsp; (residual off: no + x)"


def parallel(config: ModelConfig) -> tuple[bool, bool]:
    """(attention and FFN side by side: GPT-NeoX's use_parallel_residual, through one shared norm: Phi)."""
    return (config.parallel_residual, config.shared_norm)


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
    h = "(h · d<sub>model</sub><sup>−½</sup>)" if config.output_rescale else "h"  # T5, tied
    if config.final_softcap:  # Gemma 2: the logits soft-capped
        return f"z = {h} {w}{bias}" + final_softcap_formula(config)
    return f"logits = {h} {w}{bias}"


def of_trace(trace: Trace) -> tuple[ModelConfig, RunOptions]:
    return trace.config, trace.options


def addnorm_texts(
    placement: str, residual: bool, sub: str, n: int, where: str, word: str = "LayerNorm"
) -> tuple[str, tuple[str, str, str]]:
    """The add & norm panel's sentence and its three slot titles, left to right as the data flows.
    post-norm: F(x) | x + F(x) | Norm(x + F(x));  pre-norm: x | Norm(x) | x + F(Norm(x)); without the "+ x"
    when the residual is off, so no title claims an add that did not happen."""
    if placement == "output":  # OLMo-2: the norm on the sub-layer's output
        return output_addnorm_texts(residual, sub, n, where, word)
    if placement in ("sandwich", "sandwich_post"):  # Gemma 2: a norm before and after
        return fp.sandwich_addnorm_texts(residual, sub, n, where, word, placement == "sandwich_post")
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


# ---- Gemma 2: the scaling by √query_pre_attn_scalar ------------------------------------------------------------
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
