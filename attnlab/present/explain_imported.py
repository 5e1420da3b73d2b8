"""Explanations for what imported architectures compute differently: RMSNorm, the gated (SwiGLU) feed-forward
network, grouped-query attention, rotary positions, learned positions with an offset, token types, the embedding
LayerNorm, √d_model scaling, the masked-LM output head and the logits bias. Qt-free.

The pages of the steps an imported model computes differently (`rmsnorm_page`, `gated_ffn_page`,
`qkv_grouped_page`) are picked by the explanation of their kind (explain_layers, explain_attention); the sentences
`extra_notes` adds go under the input, Q, K, V and output pages. Every page has the layout of explain_page.page.
`kv_groups` / `gqa_text` tell which Q heads share each K/V head; the Q/K/V panel prints the same words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import explain_factorised, words
from attnlab.present import formulas as fm
from attnlab.present import head_width as hw
from attnlab.present.explain_page import DM, page
from attnlab.present.facts import layer_name, layer_side, norm_placement, residual_on, sublayer_kind
from attnlab.present.formulas_placement import output_where, sandwich_where
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

FORMULAS = {
    "gqa": "head h reads K<sub>g(h)</sub>, V<sub>g(h)</sub>, &nbsp; g(h) = ⌊h / (H / H<sub>kv</sub>)⌋",
    "rotary": (
        "RoPE (half-split): [x<sub>1</sub>, x<sub>2</sub>] ↦ [x<sub>1</sub> cos θ<sub>p</sub> − x<sub>2</sub> "
        "sin θ<sub>p</sub>, x<sub>2</sub> cos θ<sub>p</sub> + x<sub>1</sub> sin θ<sub>p</sub>], &nbsp; "
        "θ<sub>p,i</sub> = p / base<sup>2i/d<sub>k</sub></sup>"
    ),
    "learned_offset": "PE(pos) = P[pos + offset], &nbsp; a learned table row per position",
    "embed": (
        "X = LayerNorm(E[token] + T[type] + P[pos]) (embedding LayerNorm), "
        "E scaled by √d<sub>model</sub> where the model does so"
    ),
    "mlm_head": "h′ = LayerNorm(act(h W<sub>dense</sub> + b)), &nbsp; logits = h′ W<sub>out</sub> + b<sub>logits</sub>",
}
ACTIVATION_WORDS = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU (tanh approximation)", "silu": "SiLU"}


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
        FORMULAS["gqa"]
        + fm.qk_norm_step(trace.config)
        + fm.rope_scaling_formula(trace.config if _rotary_sentence(trace) else None),
        [
            f"This model has {h} query heads but only {h_kv} key/value heads: W<sub>K</sub> and "
            f"W<sub>V</sub> are {h // h_kv}× narrower than W<sub>Q</sub>, and each K/V head is shared by "
            f"{h // h_kv} consecutive Q heads (grouped-query attention, as in Llama and Qwen2). It "
            "saves memory for the key/value cache; every Q head still gets its own attention pattern.",
            gqa_text(h, h_kv) + ".",
            hw.head_width_sentence(trace.config, h),  # '' unless head_dim sets the heads' width
            _rotary_sentence(trace),
        ],
        f"Q [{h} × T × d<sub>k</sub>], K and V [{h_kv} × T × d<sub>k</sub>].",
    )


def _rotary_sentence(trace: Trace) -> str:
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


# ---- RMSNorm ---------------------------------------------------------------------------------------------
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


# ---- inputs and output ------------------------------------------------------------------------------------
def input_sentences(trace: Trace, side: str) -> list[str]:
    """What an imported model adds around its embeddings, one sentence each (empty for the classroom ones)."""
    cfg = trace.config
    out = []
    if cfg.scale_embedding:
        out.append(
            f"Token embeddings are multiplied by √{DM} = {cfg.d_model**0.5:.1f} before positions are "
            "added, so they are not drowned by the position vectors."
        )
    if names.side_entry(side, names.TYPE) in trace:
        out.append(
            "A token-type (segment) embedding is added too: it tells sentence A from sentence B; every "
            "token of a single sentence has type 0."
        )
    if cfg.positional == "learned" and cfg.pos_offset:
        out.append(
            f"Learned positions start at row {cfg.pos_offset} of the table (position p reads row "
            f"p + {cfg.pos_offset}), a convention from RoBERTa's padding index."
        )
    if cfg.positional == "rotary":
        out.append(
            "No position vector is added here: this model rotates Q and K inside every attention "
            "(rotary position encoding)."
        )
    if names.norm_entry(names.embed_norm(side), "out") in trace:
        out.append("The sum then goes through an embedding LayerNorm before the first layer.")
    return out + explain_factorised.factorised_sentences(trace, side)


def output_sentences(trace: Trace) -> list[str]:
    cfg = trace.config
    out = []
    if names.head_entry("pre") in trace or cfg.output_head:
        out.append(
            "Before the vocabulary projection, a masked-LM head transforms each vector: a dense layer, "
            f"{ACTIVATION_WORDS.get(cfg.activation, cfg.activation)}, then a LayerNorm."
        )
    if cfg.has_bias("logits"):
        out.append("A learned bias b<sub>logits</sub> (one number per vocabulary entry) is added to the logits.")
    if cfg.arch == "encoder-only":
        out.append("Each [MASK] position shows the model's guess for the hidden word.")
    return out + explain_factorised.head_sentences(trace)


def extra_notes(stage: Stage, trace: Trace) -> str:
    """A paragraph appended to the embedding / input / Q, K, V (rotary) / output pages of an imported model
    ('' if none)."""
    if stage.side and stage.kind in ("embed", "input"):
        sentences = input_sentences(trace, stage.side)
    elif stage.kind in (names.LOGITS, names.PROBS):
        sentences = output_sentences(trace)
    elif stage.kind == "qkv" and stage.site and names.site_kind(stage.site).endswith("self"):
        sentences = [s for s in [_rotary_sentence(trace)] if s]
    else:
        sentences = []
    return f"\n<p><b>This model:</b> {' '.join(sentences)}</p>" if sentences else ""
