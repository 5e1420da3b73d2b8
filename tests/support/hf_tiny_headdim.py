"""Tiny random Hugging Face models whose head_dim x num_attention_heads differs from hidden_size (w-headdim), as
in every released Qwen3, Gemma (7B: 16 heads of 256 over 3072), Gemma 2/3 and Mistral-Nemo (32 heads of 128
over 5120): W_Q maps d -> H·d_k, W_O maps H·d_k -> d. Built from config objects (never downloaded), like
hf_tiny.py's; family_cases.py merges HEADDIM_CASES into FAMILY_CASES; test_head_dim.py tests them."""

from __future__ import annotations

import transformers

from tests.support.hf_tiny import VOCAB, Case, _model

# hidden 32, 4 Q heads: head_dim 16 makes the heads 64 wide together (wider than d), 4 makes them 16 (narrower)
SIZES = {"vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 48, "max_position_embeddings": 32}
GEMMA_TOKENS = {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2}


def llama(head_dim=16, **changes):
    """Llama, 4 Q / 2 K/V heads of d_k = head_dim."""
    cfg = transformers.LlamaConfig(
        **SIZES, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim, **changes
    )
    return _model(transformers.LlamaForCausalLM, cfg)


def mistral():
    """Mistral (Mistral-Nemo's shape in small: heads narrower than d), 4 Q / 2 K/V heads of 4, window 3."""
    cfg = transformers.MistralConfig(
        **SIZES, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=4, sliding_window=3
    )
    return _model(transformers.MistralForCausalLM, cfg)


def qwen3():
    """Qwen3, 4 Q / 2 K/V heads of 16: QK-norm over each head's 16 numbers."""
    cfg = transformers.Qwen3Config(
        **SIZES, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16
    )
    return _model(transformers.Qwen3ForCausalLM, cfg)


def olmo2():
    """OLMo-2, 4 Q / 2 K/V heads of 16: QK-norm over the whole Q (64 numbers) and K (32)."""
    cfg = transformers.Olmo2Config(
        **SIZES,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        pad_token_id=1,
        eos_token_id=0,
    )
    return _model(transformers.Olmo2ForCausalLM, cfg)


def gemma():
    """Gemma (7B's shape in small: as many K/V heads as Q heads, 4 heads of 16 over hidden 32)."""
    cfg = transformers.GemmaConfig(
        **SIZES, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, head_dim=16, **GEMMA_TOKENS
    )
    return _model(transformers.GemmaForCausalLM, cfg)


def gemma2():
    """Gemma 2, 4 Q / 2 K/V heads of 16, local and global layers (window 3), ÷ √24, soft-caps."""
    cfg = transformers.Gemma2Config(
        **SIZES,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=24,
        sliding_window=3,
        attn_logit_softcapping=2.0,
        final_logit_softcapping=3.0,
        **GEMMA_TOKENS,
    )
    return _model(transformers.Gemma2ForCausalLM, cfg)


def gemma3():
    """Gemma 3 text, 4 Q / 2 K/V heads of 16, QK-norm per head, 3 layers (local, local, global)."""
    cfg = transformers.Gemma3TextConfig(
        **SIZES,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=16,
        sliding_window=3,
        sliding_window_pattern=3,
        **GEMMA_TOKENS,
    )
    return _model(transformers.Gemma3ForCausalLM, cfg)


def phi3():
    """Phi-3 with a fused qkv_proj of H·d_k + 2 H_kv·d_k = 64 + 2·32 rows, 4 Q / 2 K/V heads of 16."""
    cfg = transformers.Phi3Config(
        **SIZES,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        pad_token_id=0,
        eos_token_id=2,
    )
    return _model(transformers.Phi3ForCausalLM, cfg)


def phi():
    """Phi-2's layout (parallel attention + MLP, partial rotary ½ of each head of 16), 4 heads of 16."""
    cfg = transformers.PhiConfig(**SIZES, num_hidden_layers=2, num_attention_heads=4, head_dim=16)
    return _model(transformers.PhiForCausalLM, cfg)


def _case(name, build):
    return Case(name, build, "decoder-only", final_norm_in_hidden=True)


HEADDIM_CASES = {
    "llama-headdim": (
        _case("llama-headdim", llama),
        "head_dim 16 x 4 heads = 64 ≠ hidden 32: W_Q d → H·d_k, W_O H·d_k → d (Q, K, V and concat stages), GQA 2",
    ),
    "mistral-headdim": (
        _case("mistral-headdim", mistral),
        "head_dim 4 x 4 heads = 16 ≠ hidden 32 (Mistral-Nemo's kind), GQA 2, sliding window 3",
    ),
    "qwen3-headdim": (
        _case("qwen3-headdim", qwen3),
        "head_dim 16 x 4 heads ≠ hidden 32 (every Qwen3), QK-norm per head of 16",
    ),
    "olmo2-headdim": (
        _case("olmo2-headdim", olmo2),
        "head_dim 16 x 4 heads ≠ hidden 32, QK-norm over the whole 64-wide Q and 32-wide K",
    ),
    "phi3-headdim": (
        _case("phi3-headdim", phi3),
        "head_dim 16 x 4 heads ≠ hidden 32, fused qkv_proj split into 64 + 32 + 32 rows",
    ),
    "phi-headdim": (
        _case("phi-headdim", phi),
        "head_dim 16 x 4 heads ≠ hidden 32, partial rotary ½ of each head of 16 (8 dims turn)",
    ),
    "gemma-headdim": (
        _case("gemma-headdim", gemma),
        "head_dim 16 x 4 heads ≠ hidden 32 (Gemma 7B's kind: 16 heads of 256 over 3072)",
    ),
    "gemma2-headdim": (
        _case("gemma2-headdim", gemma2),
        "head_dim 16 x 4 heads ≠ hidden 32, ÷ √query_pre_attn_scalar 24, soft-caps, local/global layers",
    ),
    "gemma3-headdim": (
        _case("gemma3-headdim", gemma3),
        "head_dim 16 x 4 heads ≠ hidden 32, QK-norm per head of 16, local layers' rotary base",
    ),
}
