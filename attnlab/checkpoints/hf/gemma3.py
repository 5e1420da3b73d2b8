"""Gemma 3 (text: Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's layout (sandwich norms, embeddings × √d,
÷ √query_pre_attn_scalar, optional soft-caps, every p-th layer global) with QK-norm over each head's d_k (q_norm,
k_norm: Gemma's RMSNorm, 1 + w), and a rotary base of its own for the local layers: rope_parameters
{"full_attention": {...}, "sliding_attention": {...}} (transformers 5), or rope_theta / rope_scaling for the
global and rope_local_base_freq for the local layers (older files). The local layers' rope must be plain."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from attnlab.checkpoints.hf import gemma2
from attnlab.checkpoints.hf.common import ConvertedState, HFConfig, StateDict, field, refuse
from attnlab.checkpoints.hf.qwen3 import take_qk_norms
from attnlab.engine.config import ModelConfig

GLOBAL_THETA, LOCAL_THETA = 1_000_000.0, 10_000.0  # Gemma3TextConfig's defaults


def rope_split(hf: HFConfig) -> tuple[dict[str, Any], float, list[str]]:
    """(config.json fields under which llama.rope_settings reads the global layers' rope, the local layers' base,
    notes), as Gemma3TextConfig.convert_rope_params_to_dict reads them: rope_parameters {full_attention,
    sliding_attention} (a flat rope_parameters is not read), rope_scaling's keys laid over full_attention's, then
    rope_theta (1e6) and rope_local_base_freq (1e4) where the dicts name no rope_theta."""
    params, scaling = field(hf, "rope_parameters"), field(hf, "rope_scaling")
    notes = []
    if params is not None and not isinstance(params, dict):
        raise refuse("rope_parameters", f"must be a JSON object, not {params!r}")
    if scaling is not None and not isinstance(scaling, dict):
        raise refuse("rope_scaling", f"must be a JSON object, not {scaling!r}")
    nested = params is not None and ("full_attention" in params or "sliding_attention" in params)
    if params and not nested:
        notes.append("rope_parameters names neither full_attention nor sliding_attention: not read (as transformers)")
    if params is not None and scaling is not None and not isinstance(params.get("full_attention"), dict):
        raise refuse("rope_scaling", "needs rope_parameters' full_attention to lay its keys over (transformers fails)")
    params = params if params is not None else {}
    full = {**(params.get("full_attention") or {"rope_type": "default"}), **(scaling or {})}
    local = params.get("sliding_attention") or {"rope_type": "default"}
    if not isinstance(full, dict) or not isinstance(local, dict):
        raise refuse("rope_parameters", "full_attention and sliding_attention must be JSON objects")
    full.setdefault("rope_theta", field(hf, "rope_theta", GLOBAL_THETA))
    local_theta = local.get("rope_theta", field(hf, "rope_local_base_freq", LOCAL_THETA))
    if local.get("rope_type", local.get("type", "default")) != "default":
        raise refuse(
            "rope_parameters",
            f"sliding_attention rope_type {local.get('rope_type', local.get('type'))!r}: attnlab turns "
            "the local layers with plain rotary only",
        )
    if isinstance(local_theta, bool) or not isinstance(local_theta, (int, float)) or not 0 < local_theta < math.inf:
        raise refuse("rope_local_base_freq", f"must be a positive number, not {local_theta!r}")
    global_rope = {"rope_parameters": full, "rope_scaling": None, "original_max_position_embeddings": None}
    return global_rope, float(local_theta), notes


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    global_rope, local_theta, rope_notes = rope_split(hf)
    config, notes = gemma2.config_from_hf(
        {**hf, **global_rope, "query_pre_attn_scalar": field(hf, "query_pre_attn_scalar", 256)}
    )
    local = local_theta if config.sliding_window else 0.0
    return dataclasses.replace(config, qk_norm="head", rope_local_theta=local), notes + rope_notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    out: ConvertedState = {}
    taken = take_qk_norms(state_dict, config, out, gamma_offset=1.0)  # Gemma's RMSNorm: x / rms · (1 + w)
    rest = {k: v for k, v in state_dict.items() if k not in taken}
    converted, notes = gemma2.convert_tensors(hf, config, rest)
    return {**converted, **out}, notes
