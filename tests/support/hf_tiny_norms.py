"""Tiny random Hugging Face models of the families whose new parts are norms (w-norms): Qwen3 (QK-norm per
head), built from config objects like hf_tiny.py's (never downloaded). family_cases.py merges NORMS_CASES
into its own; test_hf_norms.py tests them."""

from __future__ import annotations

import transformers

from tests.support.hf_tiny import VOCAB, Case, _model


def qwen3(**changes):
    """Qwen3 with head_dim = hidden / heads (hf_tiny_headdim.py has another head_dim), GQA 4 Q / 2 K/V heads."""
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


def olmo2(**changes):
    """OLMo-2: norms on each sub-layer's output, QK-norm over the whole Q (32) and K (16: GQA 4 Q / 2 K/V heads)."""
    cfg = transformers.Olmo2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        pad_token_id=1,
        eos_token_id=0,
        **changes,
    )
    return _model(transformers.Olmo2ForCausalLM, cfg)


def gemma2(**changes):
    """Gemma 2 with 4 layers (local, global, local, global: sliding window 3 over 8 tokens), scores ÷ √16
    (query_pre_attn_scalar, d_k = 8), caps small enough to bend the scores (2) and logits (3)."""
    cfg = transformers.Gemma2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=32,
        query_pre_attn_scalar=16,
        sliding_window=3,
        attn_logit_softcapping=2.0,
        final_logit_softcapping=3.0,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        **changes,
    )
    return _model(transformers.Gemma2ForCausalLM, cfg)


def gemma3(**changes):
    """Gemma 3 text with 3 layers (local, local, global: sliding_window_pattern 3, window 3 over 8 tokens), QK-norm
    per head, local rotary base 10 000 and global 1 000 000 (rope_parameters per layer type), ÷ √16."""
    cfg = transformers.Gemma3TextConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=32,
        query_pre_attn_scalar=16,
        sliding_window=3,
        sliding_window_pattern=3,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        **changes,
    )
    return _model(transformers.Gemma3ForCausalLM, cfg)


NORMS_CASES = {
    "qwen3": (
        Case("qwen3", qwen3, "decoder-only", final_norm_in_hidden=True),
        "QK-norm: RMSNorm over each head's d_k of Q and K before rotary (the QK-norm stage)",
    ),
    "qwen3-biased": (
        Case("qwen3-biased", lambda: qwen3(attention_bias=True), "decoder-only", final_norm_in_hidden=True),
        "attention_bias: biases on Q, K, V and W_O",
    ),
    "olmo2": (
        Case("olmo2", olmo2, "decoder-only", final_norm_in_hidden=True),
        "norm on each sub-layer's output x + RMSNorm(F(x)) (add & norm stages, schematic); QK-norm over all of Q "
        "and K (the QK-norm stage)",
    ),
    "gemma2": (
        Case("gemma2", gemma2, "decoder-only", final_norm_in_hidden=True),
        "sandwich norms (add & norm + norm on the output stages), ÷ √query_pre_attn_scalar, attention soft-cap "
        "(its own stage), final logit soft-cap, local/global layers (each layer's mask)",
    ),
    "gemma3": (
        Case("gemma3", gemma3, "decoder-only", final_norm_in_hidden=True),
        "Gemma 2's sandwich and layers + QK-norm per head (1 + w), local layers' own rotary base (rope_parameters "
        "per layer type)",
    ),
}
