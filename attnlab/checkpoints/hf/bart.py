"""The BART family of encoder-decoders (transformers' modeling_bart.py, modeling_mbart.py, modeling_pegasus.py),
mapped onto attnlab's encoder-decoder. What differs between the three, as their modeling files build it:

  bart     learned positions (rows offset by 2), LayerNorm on each side's embeddings, post-norm, no final norms
  mbart    learned positions (offset 2), LayerNorm on the embeddings, pre-norm, a final LayerNorm on each stack
  pegasus  sinusoids in Marian's layout (sines, then cosines), no embedding LayerNorm, pre-norm, final LayerNorms

All three: one table shared by both stacks and the tied lm_head (unless config.json says otherwise), the
final_logits_bias added to the logits, GELU by default, nn.LayerNorm's eps 1e-5, biases everywhere, token
embeddings x sqrt(d_model) only when scale_embedding says so. The tensor names are Marian's (marian.py)."""

from __future__ import annotations

from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    field,
    int_field,
    leftover_note,
    refuse,
    take_tied_copy,
)
from attnlab.checkpoints.hf.marian import attention, check_positions, linear_and_norms, seq2seq_sizes
from attnlab.engine.config import ModelConfig

PREFIXES = ("model.",)
POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding / MBartLearnedPositionalEmbedding: row = position + 2
# model_type -> (pre-norm with a final LayerNorm per stack, learned positions with an embedding LayerNorm)
SHAPES = {"bart": (False, True), "mbart": (True, True), "pegasus": (True, False)}
GREEDY_VALUES = {"num_beams": 1, "no_repeat_ngram_size": 0, "min_length": 0, "forced_eos_token_id": None}
IGNORABLE = ("embed_positions.weight",)  # Pegasus's sinusoids, stored; attnlab computes them (checked)


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    pre_norm, learned = SHAPES[str(hf["model_type"])]
    vocab = int_field(hf, "vocab_size", required=True)
    max_len = int_field(hf, "max_position_embeddings", 1024)
    tied = bool(field(hf, "tie_word_embeddings", True))
    config = ModelConfig(
        arch="encoder-decoder",
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        **seq2seq_sizes(hf),
        norm_first=pre_norm,
        final_norm=pre_norm,
        layer_norm_eps=1e-5,
        positional="learned" if learned else "sinusoidal",
        sinusoidal_layout="interleaved" if learned else "marian",
        pos_offset=POSITION_OFFSET if learned else 0,
        embed_norm=learned,
        scale_embedding=bool(field(hf, "scale_embedding", False)),
        # BartModel.shared: one table for both stacks and the lm_head; transformers 5 unties all three when
        # tie_word_embeddings is false (the encoder and decoder then read their own embed_tokens)
        share_embeddings=tied,
        tie_output=tied,
        bias=True,
        logits_bias=True,
        max_len=max_len,
    )
    notes = ["layer_norm_eps = 1e-5 (nn.LayerNorm's default, which these models use; not in config.json)"]
    return config, notes + generation_note(hf)


def generation_note(hf: HFConfig) -> list[str]:
    """What config.json asks of generate() that attnlab's greedy decoding (one token at a time, stopping at </s>)
    does not do: beam search, n-gram blocking, a minimum length (bart-large-cnn's config.json has all three)."""
    asked = [
        f"{key} {hf[key]}"
        for key, plain in GREEDY_VALUES.items()
        if key in hf and hf[key] is not None and hf[key] != plain
    ]
    return [f"attnlab decodes greedily and does not apply config.json's {', '.join(asked)}"] if asked else []


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    import torch  # only a conversion needs torch: reading config.json does not

    t = Tensors(state_dict, PREFIXES)
    if config.positional == "sinusoidal":
        check_positions(t, config)
    table = t("shared.weight") if t.has("shared.weight") else t("encoder.embed_tokens.weight")  # [V, d]
    out: ConvertedState = {"src_embed.weight": table, "tgt_embed.weight": table}
    for side, name in (("src", "encoder.embed_tokens.weight"), ("tgt", "decoder.embed_tokens.weight")):
        if config.share_embeddings:
            take_tied_copy(t, name, table)  # saved copies of the shared table must equal it
        elif t.has(name):
            out[f"{side}_embed.weight"] = t(name)  # untied: each stack reads its own table
    for side, stack in (("src", "encoder"), ("tgt", "decoder")):
        if config.positional == "learned":
            out[f"{side}_pos.weight"] = t(f"{stack}.embed_positions.weight")  # [max_len + 2, d]
        if config.embed_norm:
            out[f"{side}_embed_norm.weight"] = t(f"{stack}.layernorm_embedding.weight")
            out[f"{side}_embed_norm.bias"] = t(f"{stack}.layernorm_embedding.bias")
        if config.final_norm:
            ours = "enc_norm" if side == "src" else "dec_norm"
            out[f"{ours}.weight"], out[f"{ours}.bias"] = t(f"{stack}.layer_norm.weight"), t(f"{stack}.layer_norm.bias")
    layers(t, config, out)
    logits_bias = (
        t("final_logits_bias").reshape(-1) if t.has("final_logits_bias") else torch.zeros(config.tgt_vocab_size)
    )  # [V]
    if config.tie_output:
        out["out_bias"] = logits_bias
        take_tied_copy(t, "lm_head.weight", table)
    else:
        if not t.has("lm_head.weight"):
            raise refuse("tie_word_embeddings", "is false but the weights have no lm_head.weight")
        out["out_proj.weight"], out["out_proj.bias"] = t("lm_head.weight"), logits_bias
    notes = [] if t.has("final_logits_bias") else ["no final_logits_bias in the weights: the logit bias is 0"]
    return out, notes + leftover_note(t.leftovers(IGNORABLE), "not part of the sequence-to-sequence model")


def layers(t: Tensors, config: ModelConfig, out: ConvertedState) -> None:
    """Every encoder and decoder layer's attention, feed-forward and norms (the names Marian's are)."""
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
