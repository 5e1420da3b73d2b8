"""Marian (the OPUS-MT translation models): encoder-decoder, post-norm, sinusoidal positions in Marian's layout
(sines in the first half, cosines in the second), embeddings x sqrt(d_model), SiLU ("swish"), shared
embeddings, and final_logits_bias added to the logits."""

from __future__ import annotations

from typing import Any

from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    activation,
    field,
    int_field,
    leftover_note,
    refuse,
    require_value,
    take_linears,
    take_tied_copy,
)
from attnlab.engine.config import ModelConfig

PREFIXES = ("model.",)
IGNORABLE = ("embed_positions.weight",)  # Marian's sinusoids, stored; attnlab computes them (checked below)


def seq2seq_sizes(hf: HFConfig) -> dict[str, Any]:
    """The sizes and activation every Marian-style encoder-decoder config.json names the same way (Marian, BART,
    mBART, Pegasus), as ModelConfig keywords; both stacks must have the same head count and FFN size."""
    return {
        "d_model": int_field(hf, "d_model", required=True),
        "n_heads": same_for_both_stacks(hf, "encoder_attention_heads", "decoder_attention_heads"),
        "d_ff": same_for_both_stacks(hf, "encoder_ffn_dim", "decoder_ffn_dim"),
        "n_encoder_layers": int_field(hf, "encoder_layers", required=True),
        "n_decoder_layers": int_field(hf, "decoder_layers", required=True),
        "activation": activation(hf, "activation_function", "gelu"),
    }


def same_for_both_stacks(hf: HFConfig, encoder_key: str, decoder_key: str) -> int:
    value = int_field(hf, encoder_key, required=True)
    if int_field(hf, decoder_key, value) != value:
        raise refuse(decoder_key, f"differs from {encoder_key}; attnlab's encoder and decoder share one size")
    return value


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "normalize_before", (False,), False, "Marian's layers are post-norm")
    require_value(hf, "normalize_embedding", (False,), False, "Marian has no embedding LayerNorm")
    vocab = int_field(hf, "vocab_size", required=True)
    tgt_vocab = int_field(hf, "decoder_vocab_size", vocab)
    share = bool(field(hf, "share_encoder_decoder_embeddings", True))
    if share and tgt_vocab != vocab:
        raise refuse("decoder_vocab_size", "differs from vocab_size although the embeddings are shared")
    config = ModelConfig(
        arch="encoder-decoder",
        src_vocab_size=vocab,
        tgt_vocab_size=tgt_vocab,
        **seq2seq_sizes(hf),
        norm_first=False,
        final_norm=False,
        layer_norm_eps=1e-5,
        positional="sinusoidal",
        sinusoidal_layout="marian",
        scale_embedding=bool(field(hf, "scale_embedding", False)),
        share_embeddings=share,
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        bias=True,
        logits_bias=True,
        max_len=int_field(hf, "max_position_embeddings", 512),
    )
    return config, ["layer_norm_eps = 1e-5 (PyTorch's default, which Marian uses; it is not in config.json)"]


def check_positions(t: Tensors, config: ModelConfig) -> None:
    """The stored position table must be the sinusoids attnlab computes (in Marian's layout)."""
    from torch import finfo

    from attnlab.engine.positional import sinusoidal_table  # torch: only a conversion needs it
    from attnlab.engine.precision import arithmetic_ready

    expected = sinusoidal_table(config.max_len, config.d_model, "marian")  # [L, d]
    for stack in ("encoder", "decoder"):
        name = f"{stack}.embed_positions.weight"
        if t.has(name):
            stored = t(name)[: config.max_len]
            tolerance = max(1e-3, finfo(stored.dtype).eps / 2)  # the table rounded to its stored dtype
            if (
                stored.shape != expected[: stored.shape[0]].shape
                or float((arithmetic_ready(stored) - expected[: stored.shape[0]]).abs().max()) > tolerance
            ):
                raise refuse(
                    "model_type", f"{name} is not Marian's sinusoidal table, so these are not plain Marian weights"
                )


def attention(t: Tensors, hf_site: str, site: str, out: ConvertedState) -> None:
    take_linears(t, hf_site, site, {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}, out)


def linear_and_norms(t: Tensors, hf_layer: str, layer: str, norms: dict[str, str], out: ConvertedState) -> None:
    take_linears(t, hf_layer, layer, {"ffn.lin1": "fc1", "ffn.lin2": "fc2", **norms}, out)


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    import torch  # only a conversion needs torch: reading config.json does not

    t = Tensors(state_dict, PREFIXES)
    check_positions(t, config)
    src = t("shared.weight") if t.has("shared.weight") else t("encoder.embed_tokens.weight")
    out = {"src_embed.weight": src}
    for name in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
        if config.share_embeddings and t.has(name):
            t(name)  # copies of the shared table
    # shared: the same table under both names, as Transformer.state_dict() lists it
    out["tgt_embed.weight"] = src if config.share_embeddings else t("decoder.embed_tokens.weight")
    for i in range(config.n_encoder_layers):
        hf_layer, layer = f"encoder.layers.{i}", f"encoder.{i}"
        attention(t, f"{hf_layer}.self_attn", f"{layer}.self_attn", out)
        linear_and_norms(t, hf_layer, layer, {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"}, out)
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"decoder.layers.{i}", f"decoder.{i}"
        attention(t, f"{hf_layer}.self_attn", f"{layer}.self_attn", out)
        attention(t, f"{hf_layer}.encoder_attn", f"{layer}.cross_attn", out)
        norms = {"norm1": "self_attn_layer_norm", "norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
        linear_and_norms(t, hf_layer, layer, norms, out)
    logits_bias = (
        t("final_logits_bias").reshape(-1) if t.has("final_logits_bias") else torch.zeros(config.tgt_vocab_size)
    )  # [Vt]
    if config.tie_output:
        out["out_bias"] = logits_bias
        take_tied_copy(t, "lm_head.weight", out["tgt_embed.weight"])
    else:
        out["out_proj.weight"], out["out_proj.bias"] = t("lm_head.weight"), logits_bias
    notes = [] if t.has("final_logits_bias") else ["no final_logits_bias in the weights: the logit bias is 0"]
    return out, notes + leftover_note(t.leftovers(IGNORABLE), "not part of the translation model")
