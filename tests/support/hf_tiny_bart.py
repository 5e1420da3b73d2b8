"""Tiny random models of the BART family (BART, mBART, Pegasus), built from config objects (never downloaded),
for tests/families/test_hf_bart.py and, through family_cases.FAMILY_CASES, tests/families/test_hf_families.py and
benchmarks/family_matrix.py."""

from __future__ import annotations

import torch
import transformers

from tests.support.hf_tiny import VOCAB, Case, _model

SIZES = {
    "vocab_size": VOCAB,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 48,
    "decoder_ffn_dim": 48,
    "max_position_embeddings": 32,
}


def _with_logits_bias(built):
    model, config = built
    with torch.no_grad():  # a non-zero logit bias, so the test sees whether it is applied
        model.final_logits_bias.normal_(0.0, 0.3)
    return model, config


def bart(**changes):
    cfg = transformers.BartConfig(**{**SIZES, **changes})
    return _with_logits_bias(_model(transformers.BartForConditionalGeneration, cfg))


def mbart(**changes):
    cfg = transformers.MBartConfig(**{**SIZES, "scale_embedding": True, "decoder_start_token_id": 2, **changes})
    return _with_logits_bias(_model(transformers.MBartForConditionalGeneration, cfg))


def pegasus(**changes):
    cfg = transformers.PegasusConfig(**{**SIZES, "scale_embedding": True, **changes})
    return _with_logits_bias(_model(transformers.PegasusForConditionalGeneration, cfg))


BART_CASES = {
    "bart": (
        Case("bart", bart, "encoder-decoder"),
        "learned positions offset 2, embedding LayerNorm each side, post-norm, GELU, logits bias",
    ),
    "bart-relu-scaled": (
        Case("bart-relu-scaled", lambda: bart(activation_function="relu", scale_embedding=True), "encoder-decoder"),
        "+ scale_embedding, ReLU",
    ),
    "mbart": (
        Case("mbart", mbart, "encoder-decoder", final_norm_in_hidden=True),
        "pre-norm + final LayerNorm each stack, embedding LayerNorm, positions offset 2, embeddings × √d",
    ),
    "pegasus": (
        Case("pegasus", pegasus, "encoder-decoder", final_norm_in_hidden=True),
        "sinusoids (sines then cosines), pre-norm + final LayerNorms, embeddings × √d",
    ),
}
