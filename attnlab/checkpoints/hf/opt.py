"""OPT: decoder-only with learned positions whose table starts at row 2 (pos_offset 2), ReLU, biases everywhere,
pre-norm with a final LayerNorm (do_layer_norm_before, OPT-125m and ≥ 1.3b) or post-norm without one (OPT-350m),
tied output. project_in / project_out (word_embed_proj_dim ≠ hidden_size, OPT-350m) are refused."""

from __future__ import annotations

import dataclasses

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
    refuse,
    require_value,
    take_linears,
    take_lm_head,
)
from attnlab.engine.config import ModelConfig

POSITION_OFFSET = 2  # OPTLearnedPositionalEmbedding's: position p reads row p + 2
QKVO = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    d_model = int_field(hf, "hidden_size", required=True)
    projected = int_field(hf, "word_embed_proj_dim", d_model)
    if projected != d_model:
        raise refuse("word_embed_proj_dim", f"{projected} ≠ hidden_size {d_model} needs project_in/out")
    require_value(hf, "layer_norm_elementwise_affine", (True,), True, "LayerNorms without γ and β")
    pre = bool(field(hf, "do_layer_norm_before", True))
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        d_model=d_model,
        n_heads=int_field(hf, "num_attention_heads", required=True),
        d_ff=int_field(hf, "ffn_dim", required=True),
        n_decoder_layers=int_field(hf, "num_hidden_layers", required=True),
        activation=activation(hf, "activation_function", "relu"),
        positional="learned",
        pos_offset=POSITION_OFFSET,
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        bias=bool(field(hf, "enable_bias", True)),
        logits_bias=False,
        max_len=int_field(hf, "max_position_embeddings", 2048),
    )
    final = pre and not field(hf, "_remove_final_layer_norm", False)
    return dataclasses.replace(config, norm_first=pre, final_norm=final), []


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("model.decoder.", "decoder."))
    out = {"tgt_embed.weight": t("embed_tokens.weight"), "tgt_pos.weight": t("embed_positions.weight")}
    bias = config.bias
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"layers.{i}", f"decoder.{i}"
        take_linears(t, f"{hf_layer}.self_attn", f"{layer}.self_attn", QKVO, out, bias=bias)
        take_linears(t, hf_layer, f"{layer}.ffn", {"lin1": "fc1", "lin2": "fc2"}, out, bias=bias)
        take_linears(t, hf_layer, layer, {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"}, out)
    if config.final_norm:
        out["dec_norm.weight"], out["dec_norm.bias"] = t("final_layer_norm.weight"), t("final_layer_norm.bias")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(), "not part of the language model")
