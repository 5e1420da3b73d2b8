"""Llama (also SmolLM, TinyLlama), Qwen2 and Mistral: decoder-only, pre-norm RMSNorm with a final norm, SwiGLU
feed-forward, half-split rotary positions with the folder's rope_theta and rope scaling, grouped-query
attention. Qwen2 has biases on Q, K and V only; Llama has none unless attention_bias / mlp_bias say so;
Mistral's sliding_window limits each query to the W latest keys."""

from __future__ import annotations

import math
from typing import Any

from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    activation,
    decoder_only_config,
    field,
    int_field,
    leftover_note,
    refuse,
    take_linears,
    take_lm_head,
)
from attnlab.engine.config import ModelConfig

IGNORABLE = ("rotary_emb.inv_freq",)  # a buffer older versions saved; recomputed from rope_theta
QKV_SOURCES = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj"}  # attnlab's names -> Llama's
FFN_SOURCES = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
NORM_SOURCES = {"norm1": "input_layernorm", "norm2": "post_attention_layernorm"}


ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")  # transformers' rope_type values attnlab computes


def rope_settings(hf: HFConfig, partial: bool = False) -> dict[str, Any]:
    """The ModelConfig's rotary fields from config.json: rope_theta and the rope scaling (old style: rope_theta +
    rope_scaling {type | rope_type, factor, …}; new style: rope_parameters {rope_type, rope_theta, …}).
    `partial`: the family turns only partial_rotary_factor of each head (StableLM); others refuse it."""
    key = "rope_parameters" if field(hf, "rope_parameters") else "rope_scaling"
    params = {**(field(hf, "rope_scaling") or {}), **(field(hf, "rope_parameters") or {})}
    if not isinstance(params, dict):
        raise refuse(key, f"must be a JSON object, not {params!r}")
    kind = params.get("rope_type", params.get("type")) or "default"
    if kind not in ROPE_TYPES:
        raise refuse(key, f"rope_type {kind!r} is not supported (attnlab computes {', '.join(ROPE_TYPES)})")
    theta = params.get("rope_theta", field(hf, "rope_theta", 10000.0))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise refuse("rope_theta", f"must be a positive number, not {theta!r}")
    fraction = params.get("partial_rotary_factor", field(hf, "partial_rotary_factor", 1.0))
    if fraction != 1.0 and not partial:
        raise refuse("partial_rotary_factor", f"{fraction!r}: this family rotates every dimension of a head")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise refuse("partial_rotary_factor", f"must be more than 0 and at most 1, not {fraction!r}")
    settings: dict[str, Any] = {"rope_theta": float(theta), "rotary_fraction": float(fraction)}
    if kind == "default":
        return settings
    max_len = int_field(hf, "max_position_embeddings", 2048)
    original = params.get("original_max_position_embeddings") or field(hf, "original_max_position_embeddings")
    original = original or max_len
    factor = params.get("factor")
    if factor is None and kind == "yarn":
        factor = max_len / original  # as transformers infers it (DeepSeek-style folders)
    settings.update(rope_scaling=kind, rope_factor=_positive(key, "factor", factor))
    if kind == "llama3":
        settings.update(
            rope_original_max_len=int(original),
            rope_low_freq_factor=_positive(key, "low_freq_factor", params.get("low_freq_factor")),
            rope_high_freq_factor=_positive(key, "high_freq_factor", params.get("high_freq_factor")),
        )
    if kind == "yarn":
        settings.update(
            rope_original_max_len=int(original),
            rope_beta_fast=_positive(key, "beta_fast", params.get("beta_fast") or 32),
            rope_beta_slow=_positive(key, "beta_slow", params.get("beta_slow") or 1),
            rope_truncate=bool(params.get("truncate", True)),
            rope_attention_factor=_yarn_attention_factor(key, params, settings["rope_factor"]),
        )
    return settings


def _positive(key: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise refuse(key, f"{name} must be a positive number, not {value!r}")
    return float(value)


def _yarn_attention_factor(key: str, params: dict[str, Any], factor: float) -> float:
    """YaRN's factor on cos and sin: given, or 0.1 ln(s) + 1 (with mscale / mscale_all_dim when both given)."""
    if params.get("attention_factor") is not None:
        return _positive(key, "attention_factor", params["attention_factor"])

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    m, m_all = params.get("mscale"), params.get("mscale_all_dim")
    return float(mscale(factor, m) / mscale(factor, m_all)) if m and m_all else mscale(factor)


def sliding_window(hf: HFConfig) -> int:
    """The window W every layer's attention uses (0: full attention). Mistral: sliding_window (null: none);
    Qwen2 and others: layer_types, which must be all full or all sliding (attnlab gives every layer one mask)."""
    kinds = set(field(hf, "layer_types", []) or [])
    if kinds - {"full_attention", "sliding_attention"}:
        raise refuse("layer_types", f"only full or sliding attention is supported, not {sorted(kinds)}")
    if len(kinds) > 1:
        raise refuse("layer_types", "mixes full and sliding-window layers; attnlab gives every layer the same mask")
    if kinds:
        sliding = kinds == {"sliding_attention"}
    elif field(hf, "use_sliding_window", False):
        raise refuse("use_sliding_window", "without layer_types it is not said which layers use the window")
    else:
        sliding = hf["model_type"] == "mistral" and field(hf, "sliding_window") is not None
    if not sliding:
        return 0
    window = int_field(hf, "sliding_window", required=True)
    if window < 1:
        raise refuse("sliding_window", f"must be at least 1, not {window}")
    return window


def head_dim_setting(hf: HFConfig, d_model: int, n_heads: int, default: int | None = None) -> int:
    """ModelConfig.head_dim from config.json's head_dim, read as these families' attention modules read it
    (`getattr(config, "head_dim", hidden_size // num_attention_heads)`; absent or null: the config class's
    `default`, or hidden_size / num_attention_heads): 0 when it is hidden_size / num_attention_heads."""
    head_dim = int_field(hf, "head_dim", None)
    if head_dim == 0 and hf.get("model_type") == "mistral":  # Mistral reads `head_dim or hidden // heads`
        head_dim = None
    head_dim = default if head_dim is None else head_dim
    if head_dim is None or (n_heads >= 1 and head_dim * n_heads == d_model):
        return 0
    if head_dim < 1:
        raise refuse("head_dim", f"must be at least 1, not {head_dim}")
    return head_dim


def config_from_hf(hf: HFConfig, head_dim_default: int | None = None) -> tuple[ModelConfig, list[str]]:
    """`head_dim_default`: what the family's config class sets when config.json has no head_dim (Qwen3: 128,
    Gemma: 256); None: hidden_size / num_attention_heads."""
    d_model = int_field(hf, "hidden_size", required=True)
    n_heads = int_field(hf, "num_attention_heads", required=True)
    head_dim = head_dim_setting(hf, d_model, n_heads, head_dim_default)
    notes: list[str] = []
    n_kv = int_field(hf, "num_key_value_heads", None)
    if n_kv is None:
        n_kv = n_heads
        notes.append("num_key_value_heads is not in config.json: as many K/V heads as Q heads")
    qwen = hf["model_type"] == "qwen2"
    attention_bias = bool(field(hf, "attention_bias", False))
    vocab = int_field(hf, "vocab_size", required=True)
    config = decoder_only_config(
        vocab,
        d_model=d_model,
        n_heads=n_heads,
        d_ff=int_field(hf, "intermediate_size", required=True),
        n_decoder_layers=int_field(hf, "num_hidden_layers", required=True),
        activation=activation(hf, "hidden_act", "silu"),
        layer_norm_eps=float(field(hf, "rms_norm_eps", 1e-6)),
        positional="rotary",
        tie_output=bool(field(hf, "tie_word_embeddings", False)),
        bias=False,
        max_len=int_field(hf, "max_position_embeddings", 2048),
        norm="rmsnorm",
        ffn="gated",
        n_kv_heads=n_kv,
        rotary_layout="half",
        **rope_settings(hf),
        qkv_bias=qwen or attention_bias,
        attn_out_bias=attention_bias,
        ffn_bias=bool(field(hf, "mlp_bias", False)),
        logits_bias=False,
        sliding_window=sliding_window(hf),
        head_dim=head_dim,
    )
    return config, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention, ffn = (f"{hf_layer}.self_attn", f"{layer}.self_attn"), (f"{hf_layer}.mlp", f"{layer}.ffn")
        take_linears(t, *attention, QKV_SOURCES, out, bias=config.has_bias("qkv"))
        take_linears(t, *attention, {"w_o": "o_proj"}, out, bias=config.has_bias("attn_out"))
        take_linears(t, *ffn, FFN_SOURCES, out, bias=config.has_bias("ffn"))
        take_linears(t, hf_layer, layer, NORM_SOURCES, out, bias=False)  # RMSNorm: no bias
    out["dec_norm.weight"] = t("norm.weight")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(IGNORABLE), "not part of the language model")
