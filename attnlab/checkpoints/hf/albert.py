"""ALBERT: a factorised embedding (the word, position and token-type tables and their LayerNorm are
embedding_size wide; `embedding_hidden_mapping_in` maps them to hidden_size), then one layer's weights used by
every layer (num_hidden_groups = inner_group_num = 1, as every released ALBERT), post-norm like BERT; the masked-LM
head maps back to embedding_size (dense, activation, LayerNorm) and scores against the tied word embeddings."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf.bert import head_notes, take_head
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    activation,
    encoder_only_config,
    field,
    int_field,
    refuse,
    require_value,
    required_sizes,
    take_linears,
)
from attnlab.checkpoints.hf.electra import SIZE_KEYS, refuse_headless_factorised, take_embeddings
from attnlab.engine.config import ModelConfig

PREFIXES = ("albert.",)
SHARED_LAYER = "encoder.albert_layer_groups.0.albert_layers.0"  # the one layer every layer runs
LAYER_SOURCES = {  # attnlab's names in an encoder layer -> ALBERT's (weight and bias each)
    "self_attn.w_q": "attention.query",
    "self_attn.w_k": "attention.key",
    "self_attn.w_v": "attention.value",
    "self_attn.w_o": "attention.dense",
    "norm1": "attention.LayerNorm",
    "ffn.lin1": "ffn",
    "ffn.lin2": "ffn_output",
    "norm2": "full_layer_layer_norm",
}


def declares_mlm_head(hf: HFConfig) -> bool:
    return any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in field(hf, "architectures", []) or [])


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "position_embedding_type", ("absolute",), "absolute", "only absolute learned positions")
    for key in ("num_hidden_groups", "inner_group_num"):
        if int_field(hf, key, 1) != 1:
            raise refuse(key, f"{hf[key]} is not supported: attnlab runs ALBERT's one shared layer (1 group of 1)")
    sizes = required_sizes(hf, SIZE_KEYS)
    embedding_size = int_field(hf, "embedding_size", 128)
    if embedding_size < 1:
        raise refuse("embedding_size", f"must be at least 1, not {embedding_size}")
    head = declares_mlm_head(hf)
    config = encoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **sizes,
        activation=activation(hf, "hidden_act", "gelu_new"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-12)),
        tie_output=True,
        logits_bias=head,
        max_len=int_field(hf, "max_position_embeddings", 512),
        type_vocab_size=int_field(hf, "type_vocab_size", 2),
        output_head=head,
        embed_dim=embedding_size,  # ALBERT always maps by a linear layer, even when embedding_size = hidden_size
        share_layers=True,
    )
    return config, []


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """The head is there when its tensors are, whatever `architectures` says."""
    head = Tensors(state_dict, PREFIXES).has("predictions.dense.weight")
    refuse_headless_factorised(config, head)
    return dataclasses.replace(config, output_head=head, logits_bias=head)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, PREFIXES)
    out: ConvertedState = {}
    take_embeddings(t, "encoder.embedding_hidden_mapping_in", out)
    shared: ConvertedState = {}
    take_linears(t, SHARED_LAYER, "shared", LAYER_SOURCES, shared)
    for i in range(config.n_encoder_layers):  # the same tensors under every layer's name (the engine ties them)
        out.update({key.replace("shared.", f"encoder.{i}.", 1): value for key, value in shared.items()})
    take_head(t, config, "predictions.dense", "predictions.LayerNorm", "predictions.decoder", "predictions.bias", out)
    return out, head_notes(t, config, "the pooler and the sentence-order head are not shown")
