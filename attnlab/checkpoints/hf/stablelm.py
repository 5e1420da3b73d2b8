"""StableLM (2, Zephyr): decoder-only, pre-norm LayerNorm (with biases) and a final one, SwiGLU feed-forward,
partial rotary positions (only the first partial_rotary_factor of each head turns, half-split), grouped-query
attention, Q/K/V biases when use_qkv_bias. qk_layernorm and use_parallel_residual are refused."""

from __future__ import annotations

from attnlab.checkpoints.hf import llama
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
    llama_style_sizes,
    require_value,
    take_linears,
    take_lm_head,
)
from attnlab.checkpoints.hf.rope import RopeReading, rope_settings
from attnlab.engine.config import ModelConfig


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "qk_layernorm", (False,), False, "a LayerNorm per head on Q and K")
    require_value(hf, "use_parallel_residual", (False,), False, "attention and MLP in parallel")
    sizes = llama_style_sizes(hf)
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **sizes,
        activation=activation(hf, "hidden_act", "silu"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-5)),
        positional="rotary",
        tie_output=bool(field(hf, "tie_word_embeddings", False)),
        bias=False,
        max_len=int_field(hf, "max_position_embeddings", 4096),
        ffn="gated",
        n_kv_heads=int_field(hf, "num_key_value_heads", sizes["n_heads"]),
        rotary_layout="half",
        qkv_bias=bool(field(hf, "use_qkv_bias", False)),
        attn_out_bias=False,
        ffn_bias=False,
        logits_bias=False,
        **rope_settings(hf, partial=True, reading=RopeReading(partial_default=0.25)),  # StableLmConfig's default
    )
    return config, []


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention = (f"{hf_layer}.self_attn", f"{layer}.self_attn")
        take_linears(t, *attention, llama.QKV_SOURCES, out, bias=config.has_bias("qkv"))
        take_linears(t, *attention, {"w_o": "o_proj"}, out, bias=False)
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", llama.FFN_SOURCES, out, bias=False)
        take_linears(t, hf_layer, layer, llama.NORM_SOURCES, out)  # LayerNorms: weight and bias
    out["dec_norm.weight"], out["dec_norm.bias"] = t("norm.weight"), t("norm.bias")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")
