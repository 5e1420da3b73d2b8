"""BERT and RoBERTa (XLM-RoBERTa and CamemBERT have RoBERTa's layout and tensor names): encoder-only, post-norm,
learned positions (RoBERTa's start at padding_idx + 1), token-type embeddings, a LayerNorm on the embeddings, and
the masked-LM head when the weights have it."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    activation,
    encoder_only_config,
    field,
    int_field,
    leftover_note,
    refuse,
    require_value,
    required_sizes,
    take_linears,
    take_tied_copy,
)
from attnlab.engine.config import ModelConfig

IGNORABLE = ("position_ids", "token_type_ids")  # index buffers some versions saved
MLM_ARCHITECTURES = ("ForMaskedLM", "ForPreTraining")
# position_embedding_type -> ModelConfig.rel_key_terms ("" : absolute learned positions)
RELATIVE_TYPES = {"absolute": "", "relative_key": "key", "relative_key_query": "key_query"}
ROBERTA_LAYOUT = ("roberta", "xlm-roberta", "camembert")  # model types with RoBERTa's tensors and position offset
NO_HEAD_NOTE = (
    "the weights have no masked-LM head, so the output stage shows each final hidden vector "
    "times the embedding matrix: not trained predictions"
)


SIZE_KEYS = {  # attnlab's size fields -> BERT's config.json keys
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads",
    "d_ff": "intermediate_size",
    "n_encoder_layers": "num_hidden_layers",
}
LAYER_SOURCES = {  # attnlab's names in an encoder layer -> BERT's (weight and bias each)
    "self_attn.w_q": "attention.self.query",
    "self_attn.w_k": "attention.self.key",
    "self_attn.w_v": "attention.self.value",
    "self_attn.w_o": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "ffn.lin1": "intermediate.dense",
    "ffn.lin2": "output.dense",
    "norm2": "output.LayerNorm",
}


def names_for(model_type: str) -> dict:
    """HF tensor names that differ between BERT and RoBERTa."""
    if model_type in ROBERTA_LAYOUT:
        return {
            "prefixes": ("roberta.",),
            "head": "lm_head.",
            "dense": "lm_head.dense",
            "norm": "lm_head.layer_norm",
            "decoder": "lm_head.decoder",
            "bias": "lm_head.bias",
        }
    return {
        "prefixes": ("bert.",),
        "head": "cls.predictions.",
        "dense": "cls.predictions.transform.dense",
        "norm": "cls.predictions.transform.LayerNorm",
        "decoder": "cls.predictions.decoder",
        "bias": "cls.predictions.bias",
    }


def declares_mlm_head(hf: HFConfig) -> bool:
    """Whether config.json's `architectures` names a model with a masked-LM head (before weights are read)."""
    return any(a.endswith(MLM_ARCHITECTURES) for a in field(hf, "architectures", []) or [])


def relative_fields(hf: HFConfig, roberta: bool) -> dict:
    """config.json's position_embedding_type as ModelConfig fields: {} for absolute positions; for BERT's
    relative_key(_query) the terms, the distance table's M and no position table (engine/relative_key.py)."""
    why = "attnlab computes 'absolute', 'relative_key' and 'relative_key_query' (BERT's layout)"
    require_value(hf, "position_embedding_type", ("absolute",) if roberta else RELATIVE_TYPES, "absolute", why)
    kind = field(hf, "position_embedding_type", "absolute")
    if kind == "absolute":
        return {}
    span = int_field(hf, "max_position_embeddings", 512)
    return {"positional": "none", "rel_key_terms": RELATIVE_TYPES[kind], "rel_key_span": span, "max_len": span}


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    roberta = hf["model_type"] in ROBERTA_LAYOUT
    relative = relative_fields(hf, roberta)
    require_value(hf, "is_decoder", (False,), False, "BERT used as a decoder")
    require_value(hf, "add_cross_attention", (False,), False)
    offset = int_field(hf, "pad_token_id", 1) + 1 if roberta else 0
    head = declares_mlm_head(hf)
    vocab = int_field(hf, "vocab_size", required=True)
    config = encoder_only_config(
        vocab,
        **required_sizes(hf, SIZE_KEYS),
        activation=activation(hf, "hidden_act", "gelu"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-12)),
        tie_output=True,
        logits_bias=head,
        max_len=int_field(hf, "max_position_embeddings", 512) - offset,
        type_vocab_size=int_field(hf, "type_vocab_size", 2),
        pos_offset=offset,
        output_head=head,
    )
    config = dataclasses.replace(config, **relative)
    if roberta and head and config.activation != "gelu":
        raise refuse(
            "hidden_act",
            "RoBERTa's masked-LM head always uses gelu, and a different hidden_act would need a second activation",
        )
    return config, []


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """The head is there when its tensors are, whatever `architectures` says."""
    names = names_for(hf["model_type"])
    head = Tensors(state_dict, names["prefixes"]).has(names["dense"] + ".weight")
    return dataclasses.replace(config, output_head=head, logits_bias=head)


def take_head(
    t: Tensors, config: ModelConfig, dense: str, norm: str, decoder: str, bias: str, out: ConvertedState
) -> None:
    """The masked-LM head's tensors (dense, norm, tied decoder and its bias), shared with DistilBERT."""
    if not config.output_head:
        return
    if not config.tie_output:
        raise refuse("tie_word_embeddings", "an untied masked-LM decoder is not supported")
    out["out_head.dense.weight"], out["out_head.dense.bias"] = t(f"{dense}.weight"), t(f"{dense}.bias")
    out["out_head.norm.weight"], out["out_head.norm.bias"] = t(f"{norm}.weight"), t(f"{norm}.bias")
    out["out_bias"] = t(bias) if t.has(bias) else t(f"{decoder}.bias")
    take_tied_copy(t, f"{decoder}.weight", out["src_embed.weight"])
    if t.has(f"{decoder}.bias"):
        t(f"{decoder}.bias")  # a second copy of the bias


def head_notes(t: Tensors, config: ModelConfig, leftovers_are: str) -> list[str]:
    """What a person should know about a converted masked LM: that it has no head (if so), and what of the
    weights went unused (`leftovers_are` says what they are). Shared with DistilBERT."""
    notes = [] if config.output_head else [NO_HEAD_NOTE]
    return notes + leftover_note(t.leftovers(IGNORABLE), leftovers_are)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    names = names_for(hf["model_type"])
    t = Tensors(state_dict, names["prefixes"])
    positions = t("embeddings.position_embeddings.weight")  # BERT keeps it with relative_key, never adds it
    out = {
        "src_embed.weight": t("embeddings.word_embeddings.weight"),
        "src_type_embed.weight": t("embeddings.token_type_embeddings.weight"),
        "src_embed_norm.weight": t("embeddings.LayerNorm.weight"),
        "src_embed_norm.bias": t("embeddings.LayerNorm.bias"),
    }
    if config.adds_position_table:
        out["src_pos.weight"] = positions
    for i in range(config.n_encoder_layers):
        take_linears(t, f"encoder.layer.{i}", f"encoder.{i}", LAYER_SOURCES, out)
        if config.rel_key_terms:  # each layer's distance table R [2M - 1, d_k]
            distance = f"encoder.layer.{i}.attention.self.distance_embedding.weight"
            out[f"encoder.{i}.self_attn.distance_embedding.weight"] = t(distance)
    take_head(t, config, names["dense"], names["norm"], names["decoder"], names["bias"], out)
    return out, head_notes(t, config, "the pooler and task heads are not shown")
