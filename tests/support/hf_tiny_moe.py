"""Tiny random Hugging Face models of Mixtral (sparse mixture of experts) and Falcon, built from config objects
like hf_tiny.py's (never downloaded). Appended to family_cases.FAMILY_CASES, so test_hf_families.py and
benchmarks/family_matrix.py run them; test_hf_moe.py checks what is particular to them."""

from __future__ import annotations

import transformers

from tests.support.hf_tiny import VOCAB, Case, _model


def mixtral(**changes):
    """4 experts, 2 per token; a sliding window of 5 (shorter than the 8 test tokens) unless changed."""
    sizes = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=5,
    )
    cfg = transformers.MixtralConfig(**{**sizes, **changes})
    return _model(transformers.MixtralForCausalLM, cfg)


def falcon(**changes):
    """Falcon-7B's layout unless changed: multi-query, attention and MLP in parallel on one LayerNorm, rotary."""
    sizes = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=32,
        ffn_hidden_size=48,
        rope_parameters={"rope_type": "default", "rope_theta": 500.0},
    )
    cfg = transformers.FalconConfig(**{**sizes, **changes})
    return _model(transformers.FalconForCausalLM, cfg)


MOE_CASES = {
    "mixtral": (
        Case("mixtral", mixtral, "decoder-only", final_norm_in_hidden=True),
        "sparse mixture of experts (4 SwiGLU experts, top 2 per token, renormalised), sliding window 5, GQA",
    ),
    "mixtral-top1-full": (
        Case(
            "mixtral-top1-full",
            lambda: mixtral(num_experts_per_tok=1, sliding_window=None, num_local_experts=3),
            "decoder-only",
            final_norm_in_hidden=True,
        ),
        "3 experts, top 1 per token (weight 1), full attention",
    ),
    "falcon": (
        Case("falcon", falcon, "decoder-only", final_norm_in_hidden=True),
        "multi-query (1 K/V head), parallel attention + MLP on one LayerNorm, GELU, rotary θ 500",
    ),
    "falcon-new": (
        Case(
            "falcon-new",
            lambda: falcon(new_decoder_architecture=True, num_kv_heads=2, bias=True),
            "decoder-only",
            final_norm_in_hidden=True,
        ),
        "new_decoder_architecture: 2 K/V groups in the fused QKV, ln_attn + ln_mlp in parallel, biases",
    ),
    "falcon-new-one-norm": (
        Case(
            "falcon-new-one-norm",
            lambda: falcon(new_decoder_architecture=True, num_kv_heads=1, num_ln_in_parallel_attn=1),
            "decoder-only",
            final_norm_in_hidden=True,
        ),
        "new_decoder_architecture with num_ln_in_parallel_attn 1 (one shared LayerNorm), 1 K/V group",
    ),
    "falcon-rope-linear": (
        Case(
            "falcon-rope-linear",
            lambda: falcon(rope_parameters={"rope_type": "linear", "rope_theta": 500.0, "factor": 2.0}),
            "decoder-only",
            final_norm_in_hidden=True,
        ),
        "multi-query Falcon with linear rope scaling (factor 2)",
    ),
    "falcon-sequential": (
        Case(
            "falcon-sequential",
            lambda: falcon(multi_query=False, parallel_attn=False, bias=True, tie_word_embeddings=False),
            "decoder-only",
            final_norm_in_hidden=True,
        ),
        "per-head fused QKV (4 K/V heads), sequential attention then MLP, biases, untied lm_head",
    ),
}
