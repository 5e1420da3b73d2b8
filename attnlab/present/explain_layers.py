"""Explanations of the per-layer stages outside attention: add & norm (with where the norm sits and whether the
residual is on; RMSNorm's page for the models that use it), LayerNorm vs BatchNorm, the feed-forward network (the gated
one, SwiGLU, too), and the note of a model whose layers share one set of weights (ALBERT). The
entry points of kinds "addnorm", POST_NORM, NORM_COMPARE and "ffn" in present/kinds.py. Qt-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import formulas as fm
from attnlab.present import words
from attnlab.present.explain_page import DFF, DM, page, shape_of, token_word
from attnlab.present.facts import layer_name, layer_side, norm_placement, residual_on, sublayer_kind
from attnlab.present.formulas_placement import output_where, sandwich_where
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def norm_compare_page(stage: Stage, trace: Trace) -> str:
    layer, n = stage.layer or "", stage.norm or 1
    shape = shape_of(trace, names.norm_entry(names.norm(layer, n), "in")) or (0, 0)
    return page(
        f"LayerNorm vs BatchNorm {n} · {layer_name(layer)}",
        "LN: μ, σ² of each token over its features &nbsp; BN: μ, σ² of each feature over the batch",
        [
            "Both norms read the same activations, the input of this add & norm step, and are shown "
            "without γ and β. LayerNorm takes one mean and variance per token (a row); BatchNorm one "
            "per feature (a column), over the batch, here the tokens of this sentence.",
            "The slider cuts the batch to the first L tokens: the chosen token's BatchNorm output "
            "moves as its neighbours come and go, its LayerNorm output never does. That is why "
            "Transformers, which see sentences of any length one at a time, use LayerNorm.",
        ],
        f"x: {shape[0]} tokens × {shape[1]} features; LayerNorm: {shape[0]} means, BatchNorm: "
        f"{shape[1] if len(shape) > 1 else 0} means.",
    )


def _placement(trace: Trace, sub: str, word: str) -> str:
    placement = norm_placement(trace)
    add = residual_on(trace)
    if placement == "output":  # OLMo-2: the norm on the sub-layer's output
        return output_where(sub, word, add)
    if placement == "pre":
        return f"Pre-norm in this run: {word} comes BEFORE the {sub}: " + (
            f"x + {sub}({word}(x)), so the residual path carries x through untouched (as in GPT-2 and "
            "most recent models)."
            if add
            else f"{sub}({word}(x))."
        )
    return f"Post-norm in this run: {word} comes AFTER the {'sum' if add else 'sub-layer'}: " + (
        f"{word}(x + {sub}(x)), as in the original Transformer." if add else f"{word}({sub}(x))."
    )


def addnorm_page(stage: Stage, trace: Trace) -> str:
    layer, n = stage.layer or "", stage.norm or 1
    sub = words.sublayer_kind_words(sublayer_kind(trace, layer, n))
    shape = shape_of(trace, names.norm_entry(names.norm(layer, n), "out")) or (0, 0)
    word = fm.norm_word(trace.config)
    rms = word != words.word("norm")
    placement = _placement(trace, sub, word)
    residual = (
        "The residual connection is switched OFF, so the sub-layer's output replaces x instead of being added to it."
        if not residual_on(trace)
        else "The skip connection x + F(x) gives gradients an identity path (∂y/∂x = I + ∂F/∂x), so deep "
        "stacks stay trainable and each layer only has to learn a correction."
    )
    how = (
        "RMSNorm works on each token separately: it divides the token's vector by its root mean square "
        "(no mean is removed), then the learned γ rescales."
        if rms
        else "LayerNorm works on each token separately: it removes that token's mean and divides by its "
        "standard deviation, then the learned γ"
        + (" and β rescale and shift." if trace.config.norm_bias else " rescales (no β).")
    )
    title = fm.addnorm_title(trace.config, residual_on(trace), n)
    return page(
        f"{title[0].upper()}{title[1:]} · {layer_name(layer)}",
        fm.norm_formula(trace.config)
        + "<br>"
        + fm.block_formula(
            norm_placement(trace), residual_on(trace), "RMSNorm" if rms else "LN", *fm.parallel(trace.config)
        ),
        [
            placement,
            residual,
            how,
            "Pre-norm usually trains more stably in deep stacks; post-norm needs careful warm-up.",
        ],
        f"{shape[0]} {token_word(layer_side(layer))} tokens × {shape[1]}; "
        + ("one root mean square per token." if rms else "one mean and one variance per token."),
    )


def ffn_page(stage: Stage, trace: Trace) -> str:
    layer = stage.layer or ""
    hidden = trace.get(names.ffn_entry(layer, "hidden"))
    t, d_ff = (int(hidden.shape[0]), int(hidden.shape[1])) if hidden is not None else (0, 0)
    d = (shape_of(trace, names.ffn_entry(layer, "out")) or (0, 0))[1]
    relu = trace.config.activation == "relu"
    zeros = (
        f" In this run {float((hidden == 0).float().mean()):.0%} of the hidden units are exactly 0."
        if relu and hidden is not None
        else ""
    )
    act, act_formula = fm.activation(trace.config)
    gated = trace.config.ffn == "gated"
    shape = (
        f"A gate projection passed through {act} multiplies an up projection element by element, and a "
        "down projection maps the result back"
        if gated
        else f"Two linear layers with {act} between them"
    )
    return page(
        f"{words.word('ffn').capitalize()} · {layer_name(layer)}",
        fm.ffn_formula(trace.config) + "<br>" + act_formula,
        [
            f"{shape}, applied to every position on its own with the same weights: no information "
            "moves between tokens here.",
            f"The vector is widened from {DM} = {d} to {DFF} = {d_ff} "
            "(often four times wider), bent by the non-linearity and projected back.",
            "Attention only averages value vectors; this step is where each token's features are "
            "transformed non-linearly." + zeros,
        ],
        f"[{t} × {d}] → hidden [{t} × {d_ff}] → [{t} × {d}].",
    )


ACTIVATION_WORDS = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU (tanh approximation)", "silu": "SiLU"}


# ---- RMSNorm (Llama, Qwen2, T5, Gemma) --------------------------------------------------------------------------
def rmsnorm_page(stage: Stage, trace: Trace) -> str:
    layer, n = stage.layer or "", stage.norm or 1
    sub = words.sublayer_kind_words(sublayer_kind(trace, layer, n))
    placement = norm_placement(trace)
    where = (
        f"Pre-norm in this run: RMSNorm comes BEFORE the {sub}, x + {sub}(RMSNorm(x))."
        if placement == "pre"
        else f"Post-norm in this run: RMSNorm comes AFTER the sum, RMSNorm(x + {sub}(x))."
    )
    if placement == "output":  # OLMo-2: the norm on the sub-layer's output
        where = output_where(sub, "RMSNorm", residual_on(trace))
    if placement == "sandwich" or stage.kind == "post_norm":  # Gemma 2: a norm before and after
        where = sandwich_where(sub, "RMSNorm", residual_on(trace), stage.kind == "post_norm")
        placement = "sandwich"
        if stage.kind == "post_norm" and not trace.options.output_norm:
            where = "This run moved the norms (the norm toggle), so the sandwich's second norm is left out."
    residual = (
        "" if residual_on(trace) else "The residual connection is switched OFF, so the sub-layer's output replaces x."
    )
    out = trace.get(names.norm_entry(names.norm(layer, n), "out"))
    t, d = (int(out.shape[0]), int(out.shape[1])) if out is not None else (0, 0)
    title = fm.addnorm_title(trace.config, residual_on(trace), n)  # the norm formulas live in formulas.py
    title = stage.title if stage.kind == "post_norm" else title
    block = fm.block_formula(placement, residual_on(trace), "RMSNorm", *fm.parallel(trace.config))
    formula = fm.norm_formula(trace.config) + "<br>" + block
    return page(
        f"{title[0].upper()}{title[1:]} · {layer_name(layer)}",
        formula,
        [
            where,
            residual,
            "RMSNorm divides each token's vector by its root mean square (RMS) and multiplies by a learned gain g. "
            "No mean is subtracted and there is no shift β: it rescales the vector's length, it does not centre it.",
            "It is cheaper than LayerNorm and works as well in practice (Llama, Qwen2, T5).",
        ],
        f"{t} {words.word(layer_side(layer) + '.short')} tokens × {d}; one RMS per token.",
    )


# ---- gated feed-forward ----------------------------------------------------------------------------------
def gated_ffn_page(stage: Stage, trace: Trace) -> str:
    layer = stage.layer or ""
    cfg = trace.config
    act = ACTIVATION_WORDS.get(cfg.activation, "SiLU")
    gate = trace.get(names.ffn_entry(layer, "gate"))
    t, d_ff = (int(gate.shape[0]), int(gate.shape[1])) if gate is not None else (0, 0)
    d = cfg.d_model
    formula = fm.ffn_formula(cfg) + "<br>" + fm.activation(cfg)[1]
    return page(
        f"Gated feed-forward (SwiGLU) · {layer_name(layer)}",
        formula,
        [
            f"Three matrices instead of two. The gate projection x W<sub>gate</sub> goes through {act}; the up "
            "projection x W<sub>up</sub> does not. Their element-wise product ⊙ lets the gate open or close each "
            "hidden unit for this token; W<sub>down</sub> projects back.",
            f"{act} is smooth and lets small negative values through, so hidden units are rarely exactly 0.",
            "As in every FFN, each token goes through on its own: no information moves between tokens here.",
        ],
        f"[{t} × {d}] → gate, up [{t} × {d_ff}] → product [{t} × {d_ff}] → [{t} × {d}].",
    )


def addnorm_explanation(stage: Stage, trace: Trace) -> str:
    """Add & norm: RMSNorm's page for a model that uses it, else the LayerNorm page."""
    return rmsnorm_page(stage, trace) if trace.config.norm == "rmsnorm" else addnorm_page(stage, trace)


def post_norm_explanation(stage: Stage, trace: Trace) -> str:
    """A sandwich's norm on the sub-layer's output (Gemma 2, whose norms are RMSNorms)."""
    if trace.config.norm == "rmsnorm":
        return rmsnorm_page(stage, trace)
    return page(stage.title, "", ["No explanation is written for this step yet."])


def ffn_explanation(stage: Stage, trace: Trace) -> str:
    """The feed-forward network: the gated (SwiGLU) page for a gated one, else the two-layer page."""
    return gated_ffn_page(stage, trace) if trace.config.ffn == "gated" else ffn_page(stage, trace)


def shared_layers_label(n_layers: int) -> str:
    """The schematic's line under the stack's header of a model whose layers share their weights."""
    return f"layers 1–{n_layers} share one set of weights"


def shared_layers_sentence(trace: Trace) -> str:
    n = trace.config.n_encoder_layers
    return (
        f"Layers 1–{n} share one set of weights: every layer runs the very same W<sub>Q</sub>, W<sub>K</sub>, "
        "W<sub>V</sub>, W<sub>O</sub>, feed-forward and LayerNorms (ALBERT's cross-layer sharing), so only "
        "the vectors that flow in differ from layer to layer."
    )


def shared_layers_note(stage: Stage, trace: Trace) -> str:
    """A paragraph appended to every layer stage's page of a model whose layers share their weights."""
    if not trace.config.share_layers or not (stage.site or stage.layer):
        return ""
    return f"\n<p><b>This model:</b> {shared_layers_sentence(trace)}</p>"
