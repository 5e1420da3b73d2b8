"""Phi-1, Phi-1.5, Phi-2: decoder-only; each layer runs attention and the MLP side by side on ONE LayerNorm of
its input (y = x + Attn(LN(x)) + MLP(LN(x))): attnlab's parallel residual with norm 2 a copy of norm 1.
Partial rotary (partial_rotary_factor, half-split), tanh-GELU, biases on every linear layer and on the
logits. qk_layernorm is refused."""

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
)
from attnlab.checkpoints.hf.rope import RopeReading, rope_settings
from attnlab.engine.config import ModelConfig


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "qk_layernorm", (False,), False, "a LayerNorm per head on Q and K")
    sizes = llama_style_sizes(hf)
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **sizes,
        activation=activation(hf, "hidden_act", "gelu_new"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-5)),
        positional="rotary",
        tie_output=bool(field(hf, "tie_word_embeddings", False)),
        bias=True,
        max_len=int_field(hf, "max_position_embeddings", 2048),
        n_kv_heads=int_field(hf, "num_key_value_heads", sizes["n_heads"]),
        rotary_layout="half",
        parallel_residual=True,
        shared_norm=True,
        **rope_settings(hf, partial=True, reading=RopeReading(partial_default=0.5)),  # PhiConfig's default
        head_dim=llama.head_dim_setting(hf, sizes["d_model"], sizes["n_heads"]),  # PhiAttention reads head_dim
    )
    return config, []


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention = (f"{hf_layer}.self_attn", f"{layer}.self_attn")
        take_linears(t, *attention, llama.QKV_SOURCES, out)
        take_linears(t, *attention, {"w_o": "dense"}, out)
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", {"lin1": "fc1", "lin2": "fc2"}, out)
        take_linears(t, hf_layer, layer, {"norm1": "input_layernorm"}, out)
        out[f"{layer}.norm2.weight"] = out[f"{layer}.norm1.weight"]  # one LayerNorm feeds both branches
        out[f"{layer}.norm2.bias"] = out[f"{layer}.norm1.bias"]
    out["dec_norm.weight"], out["dec_norm.bias"] = t("final_layernorm.weight"), t("final_layernorm.bias")
    if not config.tie_output:
        out["out_proj.weight"], out["out_proj.bias"] = t("lm_head.weight"), t("lm_head.bias")
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")
