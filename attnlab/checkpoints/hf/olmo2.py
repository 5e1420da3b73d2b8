"""OLMo-2: Llama's layout with its RMSNorms moved onto each sub-layer's output, x + norm(F(x))
(post_attention_layernorm after attention, post_feedforward_layernorm after the feed-forward network; no norm
before a sub-layer; a final norm), and QK-norm over the whole projected Q (d numbers) and K (kv_dim numbers)
before the heads are split and rotated (q_norm, k_norm)."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    leftover_note,
    take_linears,
    take_lm_head,
)
from attnlab.checkpoints.hf.qwen3 import QK_NORM_SOURCES
from attnlab.engine.config import ModelConfig

NORM_SOURCES = {"norm1": "post_attention_layernorm", "norm2": "post_feedforward_layernorm"}  # on the outputs


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    config, notes = llama.config_from_hf(hf)
    return dataclasses.replace(config, qk_norm="whole", sublayer_norm="output"), notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention = (f"{hf_layer}.self_attn", f"{layer}.self_attn")
        take_linears(t, *attention, llama.QKV_SOURCES, out, bias=config.has_bias("qkv"))
        take_linears(t, *attention, {"w_o": "o_proj"}, out, bias=config.has_bias("attn_out"))
        take_linears(t, *attention, QK_NORM_SOURCES, out, bias=False)
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", llama.FFN_SOURCES, out, bias=config.has_bias("ffn"))
        take_linears(t, hf_layer, layer, NORM_SOURCES, out, bias=False)
    out["dec_norm.weight"] = t("norm.weight")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")
