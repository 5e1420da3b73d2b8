"""DistilBERT: BERT's layout without token types, with its own tensor names; the masked-LM head
(vocab_transform, vocab_layer_norm, vocab_projector) when the weights have it."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf.bert import declares_mlm_head, head_notes, take_head
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    activation,
    encoder_only_config,
    field,
    int_field,
    required_sizes,
    take_linears,
)
from attnlab.engine.config import ModelConfig

PREFIXES = ("distilbert.",)
LAYER_NORM_EPS = 1e-12  # fixed in DistilBERT's code, not in config.json
SIZE_KEYS = {"d_model": "dim", "n_heads": "n_heads", "d_ff": "hidden_dim", "n_encoder_layers": "n_layers"}
LAYER_SOURCES = {  # attnlab's names in an encoder layer -> DistilBERT's (weight and bias each)
    "self_attn.w_q": "attention.q_lin",
    "self_attn.w_k": "attention.k_lin",
    "self_attn.w_v": "attention.v_lin",
    "self_attn.w_o": "attention.out_lin",
    "norm1": "sa_layer_norm",
    "ffn.lin1": "ffn.lin1",
    "ffn.lin2": "ffn.lin2",
    "norm2": "output_layer_norm",
}


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    head = declares_mlm_head(hf)
    vocab = int_field(hf, "vocab_size", required=True)
    config = encoder_only_config(
        vocab,
        **required_sizes(hf, SIZE_KEYS),
        activation=activation(hf, "activation", "gelu"),
        layer_norm_eps=LAYER_NORM_EPS,
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        logits_bias=head,
        max_len=int_field(hf, "max_position_embeddings", 512),
        output_head=head,
    )
    return config, []


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """The head is there when its tensors are, whatever `architectures` says."""
    head = Tensors(state_dict, PREFIXES).has("vocab_transform.weight")
    return dataclasses.replace(config, output_head=head, logits_bias=head)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, PREFIXES)
    out = {
        "src_embed.weight": t("embeddings.word_embeddings.weight"),
        "src_pos.weight": t("embeddings.position_embeddings.weight"),
        "src_embed_norm.weight": t("embeddings.LayerNorm.weight"),
        "src_embed_norm.bias": t("embeddings.LayerNorm.bias"),
    }
    for i in range(config.n_encoder_layers):
        take_linears(t, f"transformer.layer.{i}", f"encoder.{i}", LAYER_SOURCES, out)
    take_head(t, config, "vocab_transform", "vocab_layer_norm", "vocab_projector", "vocab_projector.bias", out)
    return out, head_notes(t, config, "task heads are not shown")
