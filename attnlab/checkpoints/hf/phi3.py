"""Phi-3 (mini / medium): Llama's layout with fused weights: one qkv_proj [q + k + v rows, d] and one
gate_up_proj [2 d_ff, d] (gate rows first, then up), split here into attnlab's separate projections."""

from __future__ import annotations

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
from attnlab.checkpoints.hf.rope import RopeReading
from attnlab.engine.config import ModelConfig

# Phi3Config reads su and yarn as longrope (Phi-3's own scaling, which attnlab does not compute) and takes no other
PHI3_ROPE = RopeReading(aliases={"su": "longrope", "yarn": "longrope"}, types=("default", "longrope"))


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    return llama.config_from_hf(hf, rope=PHI3_ROPE)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.",))
    q_rows, kv_rows, f = config.attn_width, config.kv_heads * config.d_head, config.d_ff  # H·d_k, H_kv·d_k
    out = {"tgt_embed.weight": t("embed_tokens.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        qkv = t(f"{hf_layer}.self_attn.qkv_proj.weight")  # [q_rows + 2 kv_rows, d]
        q, k, v = qkv.split((q_rows, kv_rows, kv_rows))  # [q_rows, d], [kv_rows, d] twice
        out |= {f"{layer}.self_attn.w_q.weight": q, f"{layer}.self_attn.w_k.weight": k}
        out[f"{layer}.self_attn.w_v.weight"] = v
        take_linears(t, f"{hf_layer}.self_attn", f"{layer}.self_attn", {"w_o": "o_proj"}, out, bias=False)
        gate, up = t(f"{hf_layer}.mlp.gate_up_proj.weight").split((f, f))  # [2 d_ff, d] -> two [d_ff, d]
        out |= {f"{layer}.ffn.gate.weight": gate, f"{layer}.ffn.up.weight": up}
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", {"down": "down_proj"}, out, bias=False)
        take_linears(t, hf_layer, layer, llama.NORM_SOURCES, out, bias=False)
    out["dec_norm.weight"] = t("norm.weight")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")
