"""Tiny random Hugging Face models of Mixtral (sparse mixture of experts) and Falcon, built from config objects
like hf_tiny.py's (never downloaded). Appended to hf_tiny_families.FAMILY_CASES, so test_hf_families.py and
benchmarks/family_matrix.py run them; test_hf_moe.py checks what is particular to them."""

from __future__ import annotations

import transformers
from hf_tiny import VOCAB, Case, _model


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
}
