"""BLOOM: decoder-only, pre-norm LayerNorm with a final one, a LayerNorm on the word embeddings
(word_embeddings_layernorm), no position table: ALiBi (each head's scores get m_h · j added; engine/position_bias.py),
tanh-GELU (bloom_gelu_forward), biases everywhere, tied lm_head, and one fused query_key_value whose rows are
grouped per head: [q_h, k_h, v_h] for head 0, then head 1, …"""

from __future__ import annotations

from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    decoder_only_config,
    field,
    int_field,
    leftover_note,
    require_value,
    take_linears,
    take_lm_head,
)
from attnlab.engine.config import ModelConfig

NORMS = {"norm1": "input_layernorm", "norm2": "post_attention_layernorm"}
MLP = {"lin1": "dense_h_to_4h", "lin2": "dense_4h_to_h"}


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(
        hf,
        "apply_residual_connection_post_layernorm",
        (False,),
        False,
        "its residual is the normed input (y = LN(x) + Attn(LN(x))), a wiring attnlab does not build",
    )
    d_model = int_field(hf, "hidden_size", None) or int_field(hf, "n_embed", required=True)
    notes = [f"d_ff = 4 x hidden_size = {4 * d_model} (BLOOM's MLP is always 4 x wide)"]
    if int_field(hf, "pretraining_tp", 1) > 1 and bool(field(hf, "slow_but_exact", False)):
        notes.append("slow_but_exact sums the output projections in pretraining_tp slices; attnlab sums them at once")
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        d_model=d_model,
        n_heads=int_field(hf, "n_head", None) or int_field(hf, "num_attention_heads", required=True),
        d_ff=4 * d_model,
        n_decoder_layers=int_field(hf, "n_layer", None) or int_field(hf, "num_hidden_layers", required=True),
        activation="gelu_tanh",
        layer_norm_eps=float(field(hf, "layer_norm_epsilon", 1e-5)),
        positional="none",
        position_bias="alibi",
        embed_norm=True,
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        bias=True,
        logits_bias=False,
        max_len=int_field(hf, "seq_length", 2048),
    )
    notes.append(f"max_len = {config.max_len} (ALiBi has no position table; config.json's seq_length or 2048)")
    return config, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("transformer.",))
    H, dk = config.n_heads, config.d_head
    out = {"tgt_embed.weight": t("word_embeddings.weight")}
    out["tgt_embed_norm.weight"] = t("word_embeddings_layernorm.weight")
    out["tgt_embed_norm.bias"] = t("word_embeddings_layernorm.bias")
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"h.{i}", f"decoder.{i}"
        w = t(f"{hf_layer}.self_attention.query_key_value.weight").reshape(H, 3, dk, -1)  # [H, q|k|v, dk, d]
        b = t(f"{hf_layer}.self_attention.query_key_value.bias").reshape(H, 3, dk)  # [H, q|k|v, dk]
        for j, name in enumerate(("w_q", "w_k", "w_v")):
            out[f"{layer}.self_attn.{name}.weight"] = w[:, j].reshape(H * dk, -1)  # [d, d], head by head
            out[f"{layer}.self_attn.{name}.bias"] = b[:, j].reshape(H * dk)
        take_linears(t, f"{hf_layer}.self_attention", f"{layer}.self_attn", {"w_o": "dense"}, out)
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", MLP, out)
        take_linears(t, hf_layer, layer, NORMS, out)
    out["dec_norm.weight"], out["dec_norm.bias"] = t("ln_f.weight"), t("ln_f.bias")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(), "not part of the language model")
