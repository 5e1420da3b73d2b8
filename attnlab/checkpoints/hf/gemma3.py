"""Gemma 3 (text: Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's layout (sandwich norms, embeddings × √d,
÷ √query_pre_attn_scalar, optional soft-caps, every p-th layer global) with QK-norm over each head's d_k (q_norm,
k_norm: Gemma's RMSNorm, 1 + w), and a rotary base of its own for the local layers: rope_parameters
{"full_attention": {...}, "sliding_attention": {...}} (transformers 5), or rope_theta / rope_scaling for the
global and rope_local_base_freq for the local layers (older files). The local layers' rope must be plain."""

from __future__ import annotations

import dataclasses
from typing import Any

from attnlab.checkpoints.hf import gemma2
from attnlab.checkpoints.hf.common import ConvertedState, HFConfig, StateDict, field, refuse
from attnlab.checkpoints.hf.qwen3 import take_qk_norms
from attnlab.engine.config import ModelConfig

GLOBAL_THETA, LOCAL_THETA = 1_000_000.0, 10_000.0  # Gemma3TextConfig's defaults


def rope_split(hf: HFConfig) -> tuple[dict[str, Any], float]:
    """(the global layers' rope as llama.rope_settings reads it, the local layers' base) from config.json."""
    params = field(hf, "rope_parameters")
    if isinstance(params, dict) and ("full_attention" in params or "sliding_attention" in params):
        full, local = params.get("full_attention") or {}, params.get("sliding_attention") or {}
        if not isinstance(full, dict) or not isinstance(local, dict):
            raise refuse("rope_parameters", "full_attention and sliding_attention must be JSON objects")
        if local.get("rope_type", "default") != "default":
            raise refuse(
                "rope_parameters",
                f"sliding_attention rope_type {local.get('rope_type')!r}: attnlab turns "
                "the local layers with plain rotary only",
            )
        global_rope = {"rope_parameters": {"rope_theta": GLOBAL_THETA, **full}, "rope_scaling": None}
        return global_rope, float(local.get("rope_theta", LOCAL_THETA))
    local_theta = field(hf, "rope_local_base_freq", LOCAL_THETA)
    if isinstance(local_theta, bool) or not isinstance(local_theta, (int, float)) or not local_theta > 0:
        raise refuse("rope_local_base_freq", f"must be a positive number, not {local_theta!r}")
    return {"rope_theta": field(hf, "rope_theta", GLOBAL_THETA)}, float(local_theta)


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    global_rope, local_theta = rope_split(hf)
    config, notes = gemma2.config_from_hf(
        {**hf, **global_rope, "query_pre_attn_scalar": field(hf, "query_pre_attn_scalar", 256)}
    )
    local = local_theta if config.sliding_window else 0.0
    return dataclasses.replace(config, qk_norm="head", rope_local_theta=local), notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    out: ConvertedState = {}
    taken = take_qk_norms(state_dict, config, out, gamma_offset=1.0)  # Gemma's RMSNorm: x / rms · (1 + w)
    rest = {k: v for k, v in state_dict.items() if k not in taken}
    converted, notes = gemma2.convert_tensors(hf, config, rest)
    return {**converted, **out}, notes
