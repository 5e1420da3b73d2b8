"""Tiny random Hugging Face models whose attention scores get a position bias (engine/position_bias.py):
BLOOM's ALiBi, built from config objects like hf_tiny.py's (never downloaded). Used by test_hf_alibi.py,
test_hf_families.py and benchmarks/family_matrix.py (through family_cases.FAMILY_CASES)."""

from __future__ import annotations

import transformers

from tests.support.hf_tiny import VOCAB, Case, _model


def bloom(n_head: int = 6, **changes):
    """BLOOM with 6 heads: not a power of two, so the slopes take the second sequence's odd powers too."""
    cfg = transformers.BloomConfig(
        vocab_size=VOCAB, hidden_size=48, n_layer=2, n_head=n_head, layer_norm_epsilon=1e-5, **changes
    )
    return _model(transformers.BloomForCausalLM, cfg)


ALIBI_CASES = {
    "bloom": (
        Case("bloom", bloom, "decoder-only", final_norm_in_hidden=True),
        "ALiBi (6 heads: non-power-of-2 slopes), embedding LayerNorm, fused QKV per head, tanh-GELU, tied",
    ),
    "bloom-8-heads": (
        Case("bloom-8-heads", lambda: bloom(n_head=8), "decoder-only", final_norm_in_hidden=True),
        "ALiBi with 8 heads (a power of two)",
    ),
    "bloom-untied": (
        Case("bloom-untied", lambda: bloom(tie_word_embeddings=False), "decoder-only", final_norm_in_hidden=True),
        "tie_word_embeddings false: its own lm_head",
    ),
}


def mpnet(head: bool = True):
    """MPNet with its relative position bias (32 buckets, one learned number per head and bucket)."""
    cfg = transformers.MPNetConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=40,
    )
    return _model(transformers.MPNetForMaskedLM if head else transformers.MPNetModel, cfg)


# encoder-only: not in FAMILY_CASES (test_hf_families runs decoder-only models); test_hf_alibi.py checks these
MPNET_CASES = {
    "mpnet": (
        Case("mpnet", mpnet, "encoder-only"),
        "relative position bias (T5 buckets, bidirectional, one table for every layer), positions offset 2, MLM head",
    ),
    "mpnet-no-head": (
        Case("mpnet-no-head", lambda: mpnet(head=False), "encoder-only", has_logits=False),
        "MPNetModel: no masked-LM head",
    ),
}


def t5(feed_forward_proj: str = "relu", **changes):
    """T5ForConditionalGeneration: 8 buckets up to distance 6, so 8 source tokens reach the logarithmic buckets."""
    cfg = transformers.T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=48,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=6,
        feed_forward_proj=feed_forward_proj,
        decoder_start_token_id=0,
        **changes,
    )
    return _model(transformers.T5ForConditionalGeneration, cfg)


# encoder-decoder: not in FAMILY_CASES either (test_hf_families runs decoder-only models)
T5_CASES = {
    "t5": (
        Case("t5", t5, "encoder-decoder", final_norm_in_hidden=True),
        "relative position bias (buckets both ways in the encoder, backwards in the decoder), no ÷√dₖ, RMSNorm, "
        "ReLU FFN, tied output × d_model^-0.5",
    ),
    "t5-v1.1": (
        Case(
            "t5-v1.1", lambda: t5("gated-gelu", tie_word_embeddings=False), "encoder-decoder", final_norm_in_hidden=True
        ),
        "Flan-T5 / v1.1: gated-GELU FFN, no output rescale",
    ),
}
