"""T5 (v1.0: ReLU FFN; v1.1 / Flan-T5: gated-GELU FFN): encoder-decoder, pre-norm RMSNorm without bias or mean
(T5LayerNorm) and a final norm on each stack, no position table: a learned relative position bias on the
self-attention scores (engine/position_bias.py, kind "t5": bidirectional buckets in the encoder, unidirectional
in the decoder, one table per stack in its layer 0, shared by every layer), scores NOT divided by √dₖ, no
biases, one shared embedding table (not scaled). With scale_decoder_outputs (config.json's
tie_word_embeddings not false) the decoder output is multiplied by d_model^-0.5 before the tied projection."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.hf.common import (
    ACTIVATIONS,
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    field,
    int_field,
    leftover_note,
    refuse,
    take_linears,
)
from attnlab.engine.config import Activation, ModelConfig

ATTENTION = {"w_q": "q", "w_k": "k", "w_v": "v", "w_o": "o"}
IGNORABLE = ("EncDecAttention.relative_attention_bias.weight",)  # transformers ignores it on load too


def feed_forward(hf: HFConfig) -> tuple[bool, Activation]:
    """(gated, activation) from feed_forward_proj ("relu", "gated-gelu", …) as T5Config reads it."""
    proj = str(field(hf, "feed_forward_proj", "relu"))
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise refuse("feed_forward_proj", f"{proj!r} is not ACT or gated-ACT")
    name = "gelu_new" if proj == "gated-gelu" else parts[-1]  # T5Config's backwards-compatible gated-gelu
    if name not in ACTIVATIONS:
        raise refuse("feed_forward_proj", f"the activation {name!r} is not one attnlab computes")
    return parts[0] == "gated", ACTIVATIONS[name]


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    d_model, heads = int_field(hf, "d_model", required=True), int_field(hf, "num_heads", required=True)
    if int_field(hf, "d_kv", d_model // heads) * heads != d_model:
        raise refuse("d_kv", f"d_kv × num_heads must be d_model ({d_model}) for attnlab's d x d projections")
    gated, act = feed_forward(hf)
    layers = int_field(hf, "num_layers", required=True)
    rescale = field(hf, "scale_decoder_outputs", field(hf, "tie_word_embeddings", True) is not False)
    config = ModelConfig(
        arch="encoder-decoder",
        src_vocab_size=int_field(hf, "vocab_size", required=True),
        tgt_vocab_size=int_field(hf, "vocab_size", required=True),
        d_model=d_model,
        n_heads=heads,
        d_ff=int_field(hf, "d_ff", required=True),
        n_encoder_layers=layers,
        n_decoder_layers=int_field(hf, "num_decoder_layers", layers),
        activation=act,
        ffn="gated" if gated else "plain",
        norm="rmsnorm",
        norm_bias=False,
        norm_first=True,
        final_norm=True,
        layer_norm_eps=float(field(hf, "layer_norm_epsilon", 1e-6)),
        positional="none",
        position_bias="t5",
        relative_buckets=int_field(hf, "relative_attention_num_buckets", 32),
        relative_max_distance=int_field(hf, "relative_attention_max_distance", 128),
        trained_scale=False,
        scale_embedding=False,
        share_embeddings=True,
        tie_output=True,
        output_rescale=bool(rescale),
        bias=False,
        max_len=int_field(hf, "n_positions", 512),
    )
    return config, [f"max_len = {config.max_len} (T5 has no position table; config.json's n_positions or 512)"]


def config_for_weights(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> ModelConfig:
    """An lm_head.weight that differs from the shared table is the model's own output matrix."""
    import torch  # only a conversion needs torch: reading config.json does not

    t = Tensors(state_dict, ())
    if t.has("lm_head.weight") and not torch.equal(t("lm_head.weight"), t("shared.weight")):
        return dataclasses.replace(config, tie_output=False)
    return config


def stack(t: Tensors, config: ModelConfig, side: str, out: ConvertedState) -> None:
    """One stack's layers: T5's layer.0 self-attention, [layer.1 cross-attention,] then the FFN, each with its
    RMSNorm in front; the relative bias table of its layer 0; the final norm."""
    hf_stack, ours, short = ("encoder", "encoder", "enc") if side == "src" else ("decoder", "decoder", "dec")
    count = config.n_encoder_layers if side == "src" else config.n_decoder_layers
    ffn = {"lin1": "wi", "lin2": "wo"} if config.ffn == "plain" else {"gate": "wi_0", "up": "wi_1", "down": "wo"}
    for i in range(count):
        hf_layer, layer = f"{hf_stack}.block.{i}.layer", f"{ours}.{i}"
        sublayers = [("SelfAttention", "self_attn")] + ([("EncDecAttention", "cross_attn")] if side == "tgt" else [])
        for n, (hf_attn, attn) in enumerate(sublayers):
            take_linears(t, f"{hf_layer}.{n}.{hf_attn}", f"{layer}.{attn}", ATTENTION, out, bias=False)
            out[f"{layer}.norm{n + 1}.weight"] = t(f"{hf_layer}.{n}.layer_norm.weight")
        n = len(sublayers)
        take_linears(t, f"{hf_layer}.{n}.DenseReluDense", f"{layer}.ffn", ffn, out, bias=False)
        out[f"{layer}.norm{n + 1}.weight"] = t(f"{hf_layer}.{n}.layer_norm.weight")
    table = f"{hf_stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    out[f"{short}_rel_bias.weight"] = t(table)  # [buckets, H]
    out[f"{short}_norm.weight"] = t(f"{hf_stack}.final_layer_norm.weight")


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ())
    shared = t("shared.weight")
    out = {"src_embed.weight": shared, "tgt_embed.weight": shared}
    for name in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
        if t.has(name):
            t(name)  # copies of the shared table
    stack(t, config, "src", out)
    stack(t, config, "tgt", out)
    if t.has("lm_head.weight"):
        lm_head = t("lm_head.weight")
        if not config.tie_output:
            out["out_proj.weight"] = lm_head
    return out, leftover_note(t.leftovers(IGNORABLE), "not part of the translation model")
