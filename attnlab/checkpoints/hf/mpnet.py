"""MPNet: BERT's post-norm encoder (a LayerNorm on the embeddings, GELU, biases everywhere, learned positions
that start at padding_idx + 1 = 2, no token types) with a learned relative position bias on every layer's
scores: one table [32 buckets, H] (encoder.relative_attention_bias), T5's bidirectional buckets of j − i up to
distance 128, computed once and added in every layer (engine/position_bias.py, kind "t5"); the masked-LM head
when the weights have it."""

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
    refuse,
    require_value,
    required_sizes,
    take_linears,
)
from attnlab.engine.config import ModelConfig

PADDING_IDX = 1  # MPNetEmbeddings' padding_idx is 1 whatever pad_token_id says: positions start at 2
BUCKETS, MAX_DISTANCE = 32, 128  # MPNetEncoder.compute_position_bias always buckets with these
SIZE_KEYS = {
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads",
    "d_ff": "intermediate_size",
    "n_encoder_layers": "num_hidden_layers",
}
LAYER_SOURCES = {  # attnlab's names in an encoder layer -> MPNet's (weight and bias each)
    "self_attn.w_q": "attention.attn.q",
    "self_attn.w_k": "attention.attn.k",
    "self_attn.w_v": "attention.attn.v",
    "self_attn.w_o": "attention.attn.o",
    "norm1": "attention.LayerNorm",
    "ffn.lin1": "intermediate.dense",
    "ffn.lin2": "output.dense",
    "norm2": "output.LayerNorm",
}
HEAD = {"dense": "lm_head.dense", "norm": "lm_head.layer_norm", "decoder": "lm_head.decoder", "bias": "lm_head.bias"}


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(
        hf,
        "relative_attention_num_buckets",
        (BUCKETS,),
        BUCKETS,
        "transformers' MPNet buckets the relative positions into 32 whatever this says",
    )
    head = declares_mlm_head(hf)
    config = encoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **required_sizes(hf, SIZE_KEYS),
        activation=activation(hf, "hidden_act", "gelu"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-12)),
        tie_output=True,
        logits_bias=head,
        max_len=int_field(hf, "max_position_embeddings", 512) - (PADDING_IDX + 1),
        pos_offset=PADDING_IDX + 1,
        output_head=head,
        position_bias="t5",
        relative_buckets=BUCKETS,
        relative_max_distance=MAX_DISTANCE,
    )
    if head and config.activation != "gelu":
        raise refuse("hidden_act", "MPNet's masked-LM head always uses gelu, and a different hidden_act would need two")
    return config, []


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """The head is there when its tensors are, whatever `architectures` says."""
    head = Tensors(state_dict, ("mpnet.",)).has(HEAD["dense"] + ".weight")
    return dataclasses.replace(config, output_head=head, logits_bias=head)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("mpnet.",))
    out = {
        "src_embed.weight": t("embeddings.word_embeddings.weight"),
        "src_pos.weight": t("embeddings.position_embeddings.weight"),
        "src_embed_norm.weight": t("embeddings.LayerNorm.weight"),
        "src_embed_norm.bias": t("embeddings.LayerNorm.bias"),
        "enc_rel_bias.weight": t("encoder.relative_attention_bias.weight"),  # [32, H]
    }
    for i in range(config.n_encoder_layers):
        take_linears(t, f"encoder.layer.{i}", f"encoder.{i}", LAYER_SOURCES, out)
    take_head(t, config, HEAD["dense"], HEAD["norm"], HEAD["decoder"], HEAD["bias"], out)
    return out, head_notes(t, config, "the pooler and task heads are not shown")
