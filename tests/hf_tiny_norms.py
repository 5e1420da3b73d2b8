"""Tiny random Hugging Face models of the families whose new parts are norms (w-norms): Qwen3 (QK-norm per
head), built from config objects like hf_tiny.py's (never downloaded). hf_tiny_families.py merges FAMILY_CASES
into its own; test_hf_norms.py tests them."""

from __future__ import annotations

import transformers
from hf_tiny import VOCAB, Case, _model


def qwen3(**changes):
    """Qwen3 with head_dim = hidden / heads (attnlab refuses another head_dim), GQA 4 Q / 2 K/V heads."""
    cfg = transformers.Qwen3Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=32,
        **changes,
    )
    return _model(transformers.Qwen3ForCausalLM, cfg)


FAMILY_CASES = {
    "qwen3": (
        Case("qwen3", qwen3, "decoder-only", final_norm_in_hidden=True),
        "QK-norm: RMSNorm over each head's d_k of Q and K before rotary (the QK-norm stage)",
    ),
    "qwen3-biased": (
        Case("qwen3-biased", lambda: qwen3(attention_bias=True), "decoder-only", final_norm_in_hidden=True),
        "attention_bias: biases on Q, K, V and W_O",
    ),
}
