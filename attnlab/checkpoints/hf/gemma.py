"""Gemma (1): Llama's layout with the token embeddings multiplied by √d_model, tanh-GELU gated feed-forward,
a tied output, and RMSNorms that store w and scale by (1 + w): attnlab's γ is 1 + w, added here."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    activation,
    field,
    require_value,
)
from attnlab.engine.config import Activation, ModelConfig

HEAD_DIM_DEFAULT = 256  # GemmaConfig's (and Gemma 2's, Gemma 3's) head_dim when config.json has none


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "use_bidirectional_attention", (None, False), None, "Gemma as a causal language model only")
    config, notes = llama.config_from_hf(hf, head_dim_default=HEAD_DIM_DEFAULT)
    key = "hidden_activation" if field(hf, "hidden_activation") else "hidden_act"
    act: Activation
    if field(hf, key, "gelu_pytorch_tanh") == "gelu":  # a legacy value: transformers reads it as the tanh GELU
        act = "gelu_tanh"
        notes.append(f'{key} "gelu" is Gemma\'s legacy name for the tanh approximation, as transformers reads it')
    else:
        act = activation(hf, key, "gelu_pytorch_tanh")
    tied = bool(field(hf, "tie_word_embeddings", True))
    return dataclasses.replace(config, scale_embedding=True, activation=act, tie_output=tied), notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    from attnlab.engine.precision import arithmetic_ready  # torch: only a conversion needs it

    out, notes = llama.convert_tensors(hf, config, state_dict)
    for name in [n for n in out if n.endswith(("norm1.weight", "norm2.weight")) or n == "dec_norm.weight"]:
        out[name] = 1.0 + arithmetic_ready(out[name])  # Gemma's RMSNorm: x / rms · (1 + w)
    return out, [*notes, "Gemma's RMSNorms store w and multiply by 1 + w: attnlab's γ is 1 + w"]
