"""Qwen3: Llama's layout (biases on Q, K, V and W_O only where attention_bias says) with QK-norm: an RMSNorm
over each head's d_k numbers of Q and of K (q_norm, k_norm: one γ of size head_dim each), after the projection
and before rotary positions. head_dim × num_attention_heads may differ from hidden_size (every released
Qwen3); layer_types must not mix full and sliding-window layers (llama.sliding_window)."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import ConvertedState, HFConfig, StateDict, Tensors, take_linears
from attnlab.engine.config import ModelConfig

QK_NORM_SOURCES = {"qk_norm.q_norm": "q_norm", "qk_norm.k_norm": "k_norm"}  # attnlab's names -> transformers'


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    config, notes = llama.config_from_hf(hf, head_dim_default=128)  # Qwen3Config's head_dim when none is given
    return dataclasses.replace(config, qk_norm="head"), notes


def take_qk_norms(
    state_dict: StateDict, config: ModelConfig, out: ConvertedState, gamma_offset: float = 0.0
) -> set[str]:
    """out["decoder.<i>.self_attn.qk_norm.{q,k}_norm.weight"] from each layer's self_attn.{q,k}_norm.weight
    (+ `gamma_offset`: Gemma's RMSNorms scale by 1 + w); returns the state dict keys taken."""
    from attnlab.engine.precision import arithmetic_ready  # torch: only a conversion needs it

    t = Tensors(state_dict, ("model.",))
    for i in range(config.n_decoder_layers):
        take_linears(t, f"layers.{i}.self_attn", f"decoder.{i}.self_attn", QK_NORM_SOURCES, out, bias=False)
    for name in [n for n in out if n.endswith(("q_norm.weight", "k_norm.weight"))]:
        out[name] = arithmetic_ready(out[name]) + gamma_offset
    return t.taken


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    out: ConvertedState = {}
    taken = take_qk_norms(state_dict, config, out)
    rest = {k: v for k, v in state_dict.items() if k not in taken}  # llama's leftover note would name them
    converted, notes = llama.convert_tensors(hf, config, rest)
    return {**converted, **out}, notes
