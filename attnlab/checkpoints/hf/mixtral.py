"""Mixtral: Mistral's layout (pre-norm RMSNorm, half-split rotary, grouped-query attention, an optional sliding
window) with a sparse mixture-of-experts FFN in every layer: a router (`gate`, no bias) sends each token to
num_experts_per_tok of num_local_experts SwiGLU experts (engine/moe.py).

Expert weights come in two layouts: the files on the Hub (and transformers' save_pretrained) keep one module per
expert, `block_sparse_moe.experts.<e>.w1 / w3 / w2` (gate, up, down); transformers 5 holds them fused in memory,
`mlp.experts.gate_up_proj` [E, 2 d_ff, d] (gate rows first, then up) and `mlp.experts.down_proj` [E, d, d_ff]."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    field,
    int_field,
    leftover_note,
    refuse,
    take_linears,
    take_lm_head,
)
from attnlab.checkpoints.hf.rope import RopeReading
from attnlab.engine.config import ModelConfig

DEFAULT_THETA = 1_000_000.0  # MixtralConfig.default_theta: the rotary base when config.json names none
EXPERT_SOURCES = {"gate": "w1", "up": "w3", "down": "w2"}  # attnlab's names -> Mixtral's per-expert modules


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    as_mistral = {**hf, "model_type": "mistral"}  # the attention, norms and positions are Mistral's
    if field(hf, "mlp_bias") or field(hf, "attention_bias"):
        key = "mlp_bias" if field(hf, "mlp_bias") else "attention_bias"
        raise refuse(key, "Mixtral's linear layers have no biases")
    base, notes = llama.config_from_hf(as_mistral, rope=RopeReading(default_theta=DEFAULT_THETA))
    n_experts = int_field(hf, "num_local_experts", 8)
    k = int_field(hf, "num_experts_per_tok", 2)
    if n_experts < 1:
        raise refuse("num_local_experts", f"must be at least 1, not {n_experts}")
    if not 1 <= k <= n_experts:
        raise refuse("num_experts_per_tok", f"must be 1 to num_local_experts ({n_experts}), not {k}")
    return dataclasses.replace(base, n_experts=n_experts, experts_per_token=k), notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.",))
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        attention = (f"{hf_layer}.self_attn", f"{layer}.self_attn")
        take_linears(t, *attention, llama.QKV_SOURCES, out, bias=False)
        take_linears(t, *attention, {"w_o": "o_proj"}, out, bias=False)
        take_linears(t, hf_layer, layer, llama.NORM_SOURCES, out, bias=False)  # RMSNorm: no bias
        take_experts(t, config, hf_layer, f"{layer}.ffn", out)
    out["dec_norm.weight"] = t("norm.weight")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")


def take_experts(t: Tensors, config: ModelConfig, hf_layer: str, ffn: str, out: ConvertedState) -> None:
    """The router and every expert of one layer, from either layout (per-expert modules or fused tensors)."""
    moe = f"{hf_layer}.block_sparse_moe" if t.has(f"{hf_layer}.block_sparse_moe.gate.weight") else f"{hf_layer}.mlp"
    out[f"{ffn}.router.weight"] = t(f"{moe}.gate.weight")  # [E, d]
    if t.has(f"{moe}.experts.gate_up_proj"):
        gate_up, down = t(f"{moe}.experts.gate_up_proj"), t(f"{moe}.experts.down_proj")  # [E, 2F, d], [E, d, F]
        f = config.d_ff
        if gate_up.shape[:2] != (config.n_experts, 2 * f) or down.shape[:1] != (config.n_experts,):
            raise refuse("num_local_experts", f"{config.n_experts} experts of {f} do not match {tuple(gate_up.shape)}")
        for e in range(config.n_experts):
            out[f"{ffn}.experts.{e}.gate.weight"] = gate_up[e, :f]  # [F, d]
            out[f"{ffn}.experts.{e}.up.weight"] = gate_up[e, f:]  # [F, d]
            out[f"{ffn}.experts.{e}.down.weight"] = down[e]  # [d, F]
        return
    for e in range(config.n_experts):
        take_linears(t, f"{moe}.experts.{e}", f"{ffn}.experts.{e}", EXPERT_SOURCES, out, bias=False)
