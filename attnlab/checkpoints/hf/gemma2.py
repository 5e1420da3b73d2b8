"""Gemma 2: Gemma's layout (embeddings × √d, tanh-GELU gated feed-forward, RMSNorms scaling by 1 + w, tied
output) with sandwich norms, x + post_norm(F(norm(x))) (input_layernorm / post_attention_layernorm around
attention, pre_feedforward_layernorm / post_feedforward_layernorm around the feed-forward network), scores
divided by √query_pre_attn_scalar, soft-capped by attn_logit_softcapping before the mask, logits soft-capped by
final_logit_softcapping, and local (sliding-window) layers alternating with global ones (layer_types: every
p-th layer global; any other mix is refused). head_dim × num_attention_heads may differ from hidden_size."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf import gemma
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    field,
    int_field,
    leftover_note,
    refuse,
    take_linears,
    take_lm_head,
)
from attnlab.checkpoints.hf.llama import FFN_SOURCES, IGNORABLE, QKV_SOURCES
from attnlab.engine.config import ModelConfig

# attnlab's names -> transformers' (norm n before sub-layer n, post_norm n after it)
NORM_SOURCES = {
    "norm1": "input_layernorm",
    "post_norm1": "post_attention_layernorm",
    "norm2": "pre_feedforward_layernorm",
    "post_norm2": "post_feedforward_layernorm",
}


def window_pattern(hf: HFConfig) -> tuple[int, int]:
    """(sliding_window W, pattern p) from layer_types: layer i global when (i + 1) % p == 0, the others through
    W (p = 0: every layer W; W = 0: no window at all). A mix of another shape is refused."""
    n = int_field(hf, "num_hidden_layers", required=True)
    kinds = list(
        field(hf, "layer_types", None) or ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    )
    if set(kinds) - {"full_attention", "sliding_attention"} or len(kinds) != n:
        raise refuse("layer_types", f"must name full_attention or sliding_attention for each of the {n} layers")
    if "sliding_attention" not in kinds:
        return 0, 0
    window = int_field(hf, "sliding_window", required=True)
    if window < 1:
        raise refuse("sliding_window", f"must be at least 1, not {window}")
    if "full_attention" not in kinds:
        return window, 0
    p = kinds.index("full_attention") + 1
    if kinds != ["full_attention" if (i + 1) % p == 0 else "sliding_attention" for i in range(n)]:
        raise refuse(
            "layer_types", "mixes full and sliding layers in a pattern attnlab does not draw (every p-th global)"
        )
    return window, p


def softcap(hf: HFConfig, key: str) -> float:
    value = field(hf, key)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise refuse(key, f"must be a positive number or null, not {value!r}")
    return float(value)


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    config, notes = gemma.config_from_hf({**hf, "layer_types": None, "use_sliding_window": False})
    window, pattern = window_pattern(hf)
    scalar = field(hf, "query_pre_attn_scalar", 256)
    if isinstance(scalar, bool) or not isinstance(scalar, (int, float)) or not 0 < scalar < float("inf"):
        raise refuse("query_pre_attn_scalar", f"must be a positive number, not {scalar!r}")
    gemma2 = dataclasses.replace(
        config,
        sublayer_norm="sandwich",
        query_scale_dim=float(scalar),
        attn_softcap=softcap(hf, "attn_logit_softcapping"),
        final_softcap=softcap(hf, "final_logit_softcapping"),
        sliding_window=window,
        sliding_window_pattern=pattern,
    )
    return gemma2, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    from attnlab.engine.precision import arithmetic_ready  # torch: only a conversion needs it

    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention = (f"{hf_layer}.self_attn", f"{layer}.self_attn")
        take_linears(t, *attention, QKV_SOURCES, out, bias=config.has_bias("qkv"))
        take_linears(t, *attention, {"w_o": "o_proj"}, out, bias=config.has_bias("attn_out"))
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", FFN_SOURCES, out, bias=config.has_bias("ffn"))
        take_linears(t, hf_layer, layer, NORM_SOURCES, out, bias=False)
    out["dec_norm.weight"] = t("norm.weight")
    take_lm_head(t, config, out)
    for name in [n for n in out if "norm" in n.rsplit(".", 2)[-2]]:  # every RMSNorm: x / rms · (1 + w)
        out[name] = 1.0 + arithmetic_ready(out[name])
    return out, [
        *leftover_note(t.leftovers(IGNORABLE), "not part of the language model"),
        "Gemma's RMSNorms store w and multiply by 1 + w: attnlab's γ is 1 + w",
    ]
