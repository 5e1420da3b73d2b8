"""OLMo (1): Llama's layout with non-parametric LayerNorms (x − μ) / √(σ² + ε), ε = 1e-5, that learn no γ
and no β: attnlab's γ is fixed at 1 and there is no β. clip_qkv is refused."""

from __future__ import annotations

import dataclasses

import torch

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import ConvertedState, HFConfig, StateDict, require_value
from attnlab.engine.config import ModelConfig

OLMO_EPS = 1e-5  # OlmoLayerNorm's, fixed in transformers (config.json has no field for it)


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "clip_qkv", (None,), None, "Q, K and V clamped to ±clip_qkv")
    config, notes = llama.config_from_hf(hf)
    plain = dataclasses.replace(config, norm="layernorm", norm_bias=False, norm_affine=False, layer_norm_eps=OLMO_EPS)
    return plain, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    ones = torch.ones(config.d_model)
    with_norms = dict(state_dict)
    for i in range(config.n_decoder_layers):  # the weights have no norms: γ = 1 everywhere
        for hf_norm in llama.NORM_SOURCES.values():
            with_norms[f"model.layers.{i}.{hf_norm}.weight"] = ones
    with_norms["model.norm.weight"] = ones
    return llama.convert_tensors(hf, config, with_norms)
