"""GPT-NeoX and Pythia: decoder-only, pre-norm LayerNorm with a final one, parallel residual (attention and
the MLP both read the layer's input: y = x + Attn(LN1(x)) + MLP(LN2(x))) unless use_parallel_residual is
false, partial rotary (rotary_pct, half-split), GELU, biases everywhere, and one fused query_key_value whose
rows are grouped per head: [q_h, k_h, v_h] for head 0, then head 1, …"""

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
    take_linears,
)
from attnlab.checkpoints.hf.rope import RopeReading, rope_settings
from attnlab.engine.config import ModelConfig

# GPTNeoXConfig fills the rope dict from rotary_emb_base and rotary_pct (0.25), never the top-level rope_theta
NEOX_ROPE = RopeReading(theta_key="rotary_emb_base", partial_key="rotary_pct", partial_default=0.25)
IGNORABLE = (".attention.bias", ".attention.masked_bias", "rotary_emb.inv_freq")  # buffers older versions saved


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **llama_style_sizes(hf),
        activation=activation(hf, "hidden_act", "gelu"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-5)),
        positional="rotary",
        tie_output=bool(field(hf, "tie_word_embeddings", False)),
        bias=True,
        qkv_bias=bool(field(hf, "attention_bias", True)),
        attn_out_bias=bool(field(hf, "attention_bias", True)),
        logits_bias=False,
        max_len=int_field(hf, "max_position_embeddings", 2048),
        rotary_layout="half",
        parallel_residual=bool(field(hf, "use_parallel_residual", True)),
        **rope_settings(hf, partial=True, reading=NEOX_ROPE),
    )
    return config, []


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("gpt_neox.",))
    H, dk = config.n_heads, config.d_head
    out = {"tgt_embed.weight": t("embed_in.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        w = t(f"{hf_layer}.attention.query_key_value.weight").reshape(H, 3, dk, -1)  # [H, q|k|v, dk, d]
        for j, name in enumerate(("w_q", "w_k", "w_v")):
            out[f"{layer}.self_attn.{name}.weight"] = w[:, j].reshape(H * dk, -1)  # [d, d], head by head
        if config.has_bias("qkv"):
            b = t(f"{hf_layer}.attention.query_key_value.bias").reshape(H, 3, dk)  # [H, q|k|v, dk]
            for j, name in enumerate(("w_q", "w_k", "w_v")):
                out[f"{layer}.self_attn.{name}.bias"] = b[:, j].reshape(H * dk)
        attention = (f"{hf_layer}.attention", f"{layer}.self_attn")
        take_linears(t, *attention, {"w_o": "dense"}, out, bias=config.has_bias("attn_out"))
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", {"lin1": "dense_h_to_4h", "lin2": "dense_4h_to_h"}, out)
        take_linears(t, hf_layer, layer, llama.NORM_SOURCES, out)  # LayerNorms: weight and bias
    out["dec_norm.weight"], out["dec_norm.bias"] = t("final_layer_norm.weight"), t("final_layer_norm.bias")
    if config.tie_output:
        out.pop("out_proj.weight", None)
    else:
        out["out_proj.weight"] = t("embed_out.weight") if t.has("embed_out.weight") else t("lm_head.weight")
    return out, leftover_note(t.leftovers(IGNORABLE), "not part of the language model")
