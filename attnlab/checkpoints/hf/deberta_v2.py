"""DeBERTa-v2 and v3: a BERT-like post-norm encoder whose attention adds position terms to the content scores
(disentangled attention: content→position and position→content, engine/disentangled.py) over a table of
relative embeddings with its own LayerNorm; usually no absolute positions (position_biased_input false);
the masked-LM head in either of transformers' two layouts (legacy `cls.predictions.*` or `lm_predictions.*`)."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf.bert import SIZE_KEYS, declares_mlm_head, head_notes, take_head
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
    required_sizes,
    take_linears,
)
from attnlab.engine.config import ModelConfig

LAYER_SOURCES = {  # attnlab's names in an encoder layer -> DeBERTa's (weight and bias each)
    "self_attn.w_q": "attention.self.query_proj",
    "self_attn.w_k": "attention.self.key_proj",
    "self_attn.w_v": "attention.self.value_proj",
    "self_attn.w_o": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "ffn.lin1": "intermediate.dense",
    "ffn.lin2": "output.dense",
    "norm2": "output.LayerNorm",
}
POSITION_SOURCES = {
    "c2p": ("self_attn.w_pk", "attention.self.pos_key_proj"),
    "p2c": ("self_attn.w_pq", "attention.self.pos_query_proj"),
}
HEADS = {  # head layout -> (dense, norm, decoder, bias) as bert.take_head reads them
    "legacy": (
        "cls.predictions.transform.dense",
        "cls.predictions.transform.LayerNorm",
        "cls.predictions.decoder",
        "cls.predictions.bias",
    ),
    "new": (
        "lm_predictions.lm_head.dense",
        "lm_predictions.lm_head.LayerNorm",
        "lm_predictions.lm_head.decoder",  # never saved: the new head multiplies by the embeddings directly
        "lm_predictions.lm_head.bias",
    ),
}


def position_terms(hf: HFConfig) -> str:
    """config.json's pos_att_type ("c2p|p2c" or a list) as ModelConfig.rel_terms; "" without relative attention."""
    if not field(hf, "relative_attention", False):
        return ""
    raw = field(hf, "pos_att_type", [])
    parts = [x.strip() for x in raw.lower().split("|")] if isinstance(raw, str) else list(raw)
    unknown = [p for p in parts if p not in ("c2p", "p2c")]
    if unknown:
        raise refuse("pos_att_type", f"{unknown!r} is not supported: attnlab computes the terms 'c2p' and 'p2c'")
    return "|".join(term for term in ("c2p", "p2c") if term in parts)


def relative_fields(hf: HFConfig, terms: str) -> dict:
    """The ModelConfig fields of the relative table, read as transformers' DebertaV2Encoder reads them."""
    if not terms:
        return {}
    max_relative = int_field(hf, "max_relative_positions", -1)
    if max_relative < 1:
        max_relative = int_field(hf, "max_position_embeddings", 512)
    buckets = int_field(hf, "position_buckets", -1)
    norms = [x.strip() for x in str(field(hf, "norm_rel_ebd", "none")).lower().split("|")]
    return {
        "rel_terms": terms,
        "rel_span": buckets if buckets > 0 else max_relative,
        "rel_buckets": max(buckets, 0),
        "rel_max_distance": max_relative,
        "rel_norm": "layer_norm" in norms,
        "rel_share_key": bool(field(hf, "share_att_key", False)),
    }


def refuse_unsupported(hf: HFConfig) -> None:
    """One line naming the field for each DeBERTa setting attnlab cannot represent."""
    d, heads = int_field(hf, "hidden_size", required=True), int_field(hf, "num_attention_heads", required=True)
    if int_field(hf, "embedding_size", d) != d:
        raise refuse("embedding_size", "an embedding narrower than hidden_size (embed_proj) is not supported")
    if heads > 0 and int_field(hf, "attention_head_size", d // heads) != d // heads:
        raise refuse("attention_head_size", "heads of a width other than hidden_size / num_attention_heads")
    if int_field(hf, "conv_kernel_size", 0) > 0:
        raise refuse("conv_kernel_size", "the convolution after the first layer (DeBERTa-v2-xlarge) is not supported")


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    refuse_unsupported(hf)
    terms = position_terms(hf)
    absolute = bool(field(hf, "position_biased_input", True))
    head = declares_mlm_head(hf)
    config = encoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **required_sizes(hf, SIZE_KEYS),
        activation=activation(hf, "hidden_act", "gelu"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-7)),
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        logits_bias=head,
        max_len=int_field(hf, "max_position_embeddings", 512),
        type_vocab_size=int_field(hf, "type_vocab_size", 0),
        output_head=head,
        **relative_fields(hf, terms),
    )
    return dataclasses.replace(config, positional="learned" if absolute else "none"), []


def head_layout(hf: HFConfig) -> str:
    return "legacy" if field(hf, "legacy", True) else "new"


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """The head is there when its tensors are, whatever `architectures` says."""
    dense = HEADS[head_layout(hf)][0]
    head = Tensors(state_dict, ("deberta.",)).has(dense + ".weight")
    return dataclasses.replace(config, output_head=head, logits_bias=head)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("deberta.",))
    out = {
        "src_embed.weight": t("embeddings.word_embeddings.weight"),
        "src_embed_norm.weight": t("embeddings.LayerNorm.weight"),
        "src_embed_norm.bias": t("embeddings.LayerNorm.bias"),
    }
    if config.positional == "learned":
        out["src_pos.weight"] = t("embeddings.position_embeddings.weight")
    if config.type_vocab_size:
        out["src_type_embed.weight"] = t("embeddings.token_type_embeddings.weight")
    if config.disentangled:
        out["rel.embed.weight"] = t("encoder.rel_embeddings.weight")
        if config.rel_norm:
            out["rel.norm.weight"], out["rel.norm.bias"] = t("encoder.LayerNorm.weight"), t("encoder.LayerNorm.bias")
    own = (
        {}
        if config.rel_share_key
        else {ours: theirs for term, (ours, theirs) in POSITION_SOURCES.items() if term in config.disentangled}
    )
    for i in range(config.n_encoder_layers):
        take_linears(t, f"encoder.layer.{i}", f"encoder.{i}", {**LAYER_SOURCES, **own}, out)
    take_head(t, config, *HEADS[head_layout(hf)], out)
    return out, head_notes(t, config, "the pooler and task heads are not shown")
