"""ELECTRA: BERT's encoder behind a factorised embedding (the word, position and token-type tables and their
LayerNorm are embedding_size wide; `embeddings_project` maps them to hidden_size when the two differ), with the
discriminator's head (ElectraForPreTraining: one "was this token replaced?" logit per token) or the generator's
masked-LM head (ElectraForMaskedLM: dense to embedding_size, GELU, LayerNorm, the tied word embeddings + bias)."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf.bert import LAYER_SOURCES, head_notes, take_head
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

PREFIXES = ("electra.",)
SIZE_KEYS = {
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads",
    "d_ff": "intermediate_size",
    "n_encoder_layers": "num_hidden_layers",
}
DISCRIMINATOR = "discriminator_predictions"
GENERATOR = "generator_predictions"


def heads_declared(hf: HFConfig) -> tuple[bool, bool]:
    """(discriminator head, generator head) as config.json's `architectures` names them (before any weight)."""
    archs = field(hf, "architectures", []) or []
    return any(a.endswith("ForPreTraining") for a in archs), any(a.endswith("ForMaskedLM") for a in archs)


def factorised_sizes(hf: HFConfig, sizes: dict[str, int]) -> int:
    """embed_dim for ModelConfig: embedding_size when it differs from hidden_size, else 0 (no projection)."""
    embedding_size = int_field(hf, "embedding_size", 128)
    if embedding_size < 1:
        raise refuse("embedding_size", f"must be at least 1, not {embedding_size}")
    return embedding_size if embedding_size != sizes["d_model"] else 0


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "position_embedding_type", ("absolute",), "absolute", "only absolute learned positions")
    require_value(hf, "is_decoder", (False,), False, "ELECTRA used as a decoder")
    require_value(hf, "add_cross_attention", (False,), False)
    sizes = required_sizes(hf, SIZE_KEYS)
    return _config(hf, sizes, *heads_declared(hf)), []


def _config(hf: HFConfig, sizes: dict[str, int], discriminator: bool, generator: bool) -> ModelConfig:
    config = encoder_only_config(
        int_field(hf, "vocab_size", required=True),
        **sizes,
        activation=activation(hf, "hidden_act", "gelu"),
        layer_norm_eps=float(field(hf, "layer_norm_eps", 1e-12)),
        tie_output=True,
        logits_bias=generator,
        max_len=int_field(hf, "max_position_embeddings", 512),
        type_vocab_size=int_field(hf, "type_vocab_size", 2),
        output_head=generator and not discriminator,
        replaced_head=discriminator,
        embed_dim=factorised_sizes(hf, sizes),
    )
    if config.output_head and config.activation != "gelu":
        raise refuse("hidden_act", "ELECTRA's generator head always uses gelu; a second activation is not supported")
    return config


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """The head is the one whose tensors are there, whatever `architectures` says."""
    t = Tensors(state_dict, PREFIXES)
    discriminator, generator = t.has(f"{DISCRIMINATOR}.dense.weight"), t.has(f"{GENERATOR}.dense.weight")
    head = generator and not discriminator
    if head and config.activation != "gelu":
        raise refuse("hidden_act", "ELECTRA's generator head always uses gelu; a second activation is not supported")
    refuse_headless_factorised(config, head or discriminator)
    return dataclasses.replace(config, output_head=head, logits_bias=head, replaced_head=discriminator)


def refuse_headless_factorised(config: ModelConfig, head: bool) -> None:
    """Without a head attnlab shows the final vectors times the embeddings; a factorised embedding's rows are
    embedding_size wide, not hidden_size, so there is no such product (ELECTRA's and ALBERT's bare models)."""
    if config.embed_dim and not head:
        raise refuse(
            "embedding_size",
            f"{config.embed_dim} differs from hidden_size {config.d_model} and the weights have no head: "
            "attnlab shows a model's output through its head or its embedding matrix, and neither is there",
        )


def take_embeddings(t: Tensors, projection: str | None, out: ConvertedState) -> None:
    """The word, position and token-type tables, their LayerNorm and (`projection`, when factorised) the linear
    map to d_model: shared by ELECTRA and ALBERT, whose embeddings are laid out alike."""
    out["src_embed.weight"] = t("embeddings.word_embeddings.weight")
    out["src_pos.weight"] = t("embeddings.position_embeddings.weight")
    out["src_type_embed.weight"] = t("embeddings.token_type_embeddings.weight")
    out["src_embed_norm.weight"] = t("embeddings.LayerNorm.weight")
    out["src_embed_norm.bias"] = t("embeddings.LayerNorm.bias")
    if projection is not None:
        out["src_embed_proj.weight"], out["src_embed_proj.bias"] = t(f"{projection}.weight"), t(f"{projection}.bias")


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, PREFIXES)
    out: ConvertedState = {}
    take_embeddings(t, "embeddings_project" if config.embed_dim else None, out)
    for i in range(config.n_encoder_layers):
        take_linears(t, f"encoder.layer.{i}", f"encoder.{i}", LAYER_SOURCES, out)
    if config.replaced_head:
        take_linears(t, DISCRIMINATOR, "out_head", {"dense": "dense", "dense_prediction": "dense_prediction"}, out)
    take_head(
        t, config, f"{GENERATOR}.dense", f"{GENERATOR}.LayerNorm", "generator_lm_head", "generator_lm_head.bias", out
    )
    headed = dataclasses.replace(config, output_head=config.output_head or config.replaced_head)
    return out, head_notes(t, headed, "the task heads are not shown")
