"""OLMo (1): Llama's layout with non-parametric LayerNorms (x − μ) / √(σ² + ε), ε = 1e-5, that learn no γ
and no β: attnlab's γ is fixed at 1 and there is no β. clip_qkv is refused."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    leftover_note,
    require_value,
    take_linears,
    take_lm_head,
)
from attnlab.engine.config import ModelConfig

OLMO_EPS = 1e-5  # OlmoLayerNorm's, fixed in transformers (config.json has no field for it)


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "clip_qkv", (None,), None, "Q, K and V clamped to ±clip_qkv")
    config, notes = llama.config_from_hf(hf)
    plain = dataclasses.replace(config, norm="layernorm", norm_bias=False, norm_affine=False, layer_norm_eps=OLMO_EPS)
    return plain, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    import torch  # only a conversion needs torch: reading config.json does not

    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention = (f"{hf_layer}.self_attn", f"{layer}.self_attn")
        take_linears(t, *attention, llama.QKV_SOURCES, out, bias=config.has_bias("qkv"))
        take_linears(t, *attention, {"w_o": "o_proj"}, out, bias=config.has_bias("attn_out"))
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", llama.FFN_SOURCES, out, bias=config.has_bias("ffn"))
        for n in (1, 2):  # the weights hold no norms: γ = 1 everywhere
            out[f"{layer}.norm{n}.weight"] = torch.ones(config.d_model)
    out["dec_norm.weight"] = torch.ones(config.d_model)
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")
