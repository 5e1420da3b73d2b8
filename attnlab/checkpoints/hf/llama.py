"""Llama (also SmolLM, TinyLlama), Qwen2 and Mistral: decoder-only, pre-norm RMSNorm with a final norm, SwiGLU
feed-forward, half-split rotary positions with the folder's rope_theta and rope scaling, grouped-query
attention. Qwen2 has biases on Q, K and V only; Llama has none unless attention_bias / mlp_bias say so;
Mistral's sliding_window limits each query to the W latest keys."""

from __future__ import annotations

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
from attnlab.checkpoints.hf.rope import PLAIN, RopeReading, rope_settings
from attnlab.engine.config import ModelConfig

IGNORABLE = ("rotary_emb.inv_freq",)  # a buffer older versions saved; recomputed from rope_theta
QKV_SOURCES = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj"}  # attnlab's names -> Llama's
FFN_SOURCES = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
NORM_SOURCES = {"norm1": "input_layernorm", "norm2": "post_attention_layernorm"}


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


def config_from_hf(
    hf: HFConfig, head_dim_default: int | None = None, rope: RopeReading = PLAIN
) -> tuple[ModelConfig, list[str]]:
    """`head_dim_default`: what the family's config class sets when config.json has no head_dim (Qwen3: 128,
    Gemma: 256); None: hidden_size / num_attention_heads. `rope`: how the family's config class reads its rope."""
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
        **rope_settings(hf, reading=rope),
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
