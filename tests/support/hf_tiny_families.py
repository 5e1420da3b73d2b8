"""Tiny random Hugging Face models of the decoder families and mechanisms beyond the first seven (rope scaling,
GPT-2's inverse layer scaling, Mistral, Phi-3, Gemma, StableLM, OLMo, GPT-NeoX, Phi, GPT-J, OPT), built from
config objects like hf_tiny.py's (never downloaded). Used by test_hf_families.py, test_present_families.py and
benchmarks/family_matrix.py."""

from __future__ import annotations

import torch
import transformers

from tests.support.hf_tiny import VOCAB, Case, _model, llama


def llama_rope(kind: str):
    """Llama with a long-context rope scaling (Llama-3.1/3.2 style llama3; linear; dynamic; yarn). The
    original length and factors are chosen so every branch of the scaling (kept, blended, slowed) is taken
    by some pair of the 8-wide heads."""
    extra = {
        "linear": {"factor": 4.0},
        "dynamic": {"factor": 2.0},
        "llama3": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
        "yarn": {"factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 4.0, "beta_slow": 1.0},
    }[kind]
    return llama(rope_parameters={"rope_type": kind, "rope_theta": 500.0, **extra})


def qwen2_yarn():
    """Qwen2.5's long-context setting: yarn, factor 4, with the attention factor 0.1 ln(4) + 1 on cos and sin."""
    cfg = transformers.Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 8,
        },
    )
    return _model(transformers.Qwen2ForCausalLM, cfg)


def mistral(window: int | None = 3):
    """Mistral: Llama's layout with sliding-window attention (query i reads keys j with i - j < W); W = 3
    over 8 tokens, so the band cuts most of the causal triangle."""
    cfg = transformers.MistralConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        sliding_window=window,
    )
    return _model(transformers.MistralForCausalLM, cfg)


def qwen2_sliding():
    """Qwen2 with use_sliding_window on every layer (max_window_layers 0): layer_types all sliding."""
    cfg = transformers.Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        use_sliding_window=True,
        sliding_window=4,
        max_window_layers=0,
    )
    return _model(transformers.Qwen2ForCausalLM, cfg)


def phi3():
    """Phi-3: fused qkv_proj and gate_up_proj, grouped-query attention."""
    cfg = transformers.Phi3Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        pad_token_id=0,
        eos_token_id=2,
    )
    return _model(transformers.Phi3ForCausalLM, cfg)


def gemma():
    """Gemma: embeddings × √d, RMSNorm (1 + w), tanh-GELU gated feed-forward, tied output."""
    cfg = transformers.GemmaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    model, config = _model(transformers.GemmaForCausalLM, cfg)
    with torch.no_grad():  # w near 0, as trained Gemma norms are (γ = 1 + w near 1)
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(0.0, 0.3)
    return model, config


def stablelm():
    """StableLM: LayerNorm with biases, partial rotary (half of each 8-wide head turns), Q/K/V biases, GQA."""
    cfg = transformers.StableLmConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        use_qkv_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 0.5},
    )
    return _model(transformers.StableLmForCausalLM, cfg)


def olmo():
    """OLMo: non-parametric LayerNorms (no weights at all), SwiGLU, rotary, GQA."""
    cfg = transformers.OlmoConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        pad_token_id=0,
        eos_token_id=1,
    )
    return _model(transformers.OlmoForCausalLM, cfg)


def gpt_neox(parallel: bool = True):
    """GPT-NeoX / Pythia: parallel residual, partial rotary (rotary_pct ½), fused query_key_value per head."""
    cfg = transformers.GPTNeoXConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=32,
        rotary_pct=0.5,
        use_parallel_residual=parallel,
    )
    return _model(transformers.GPTNeoXForCausalLM, cfg)


def phi():
    """Phi-1/1.5/2: parallel attention + MLP on one shared LayerNorm, partial rotary ½, biases, logits bias."""
    cfg = transformers.PhiConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=32,
    )
    return _model(transformers.PhiForCausalLM, cfg)


def gptj():
    """GPT-J: parallel attention + MLP on one LayerNorm, interleaved rotary on the first 4 of 8 dims per head."""
    cfg = transformers.GPTJConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=32, rotary_dim=4)
    return _model(transformers.GPTJForCausalLM, cfg)


def opt(pre: bool = True):
    """OPT: learned positions from row 2, ReLU, biases; pre-norm + final LayerNorm, or post-norm (OPT-350m)."""
    cfg = transformers.OPTConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        ffn_dim=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=32,
        word_embed_proj_dim=32,
        pad_token_id=1,
        do_layer_norm_before=pre,
    )
    return _model(transformers.OPTForCausalLM, cfg)


def gpt2_inverse_layer(upcast: bool = False):
    """GPT-2 with scale_attn_by_inverse_layer_idx (layer l's scores also divided by l + 1); 3 layers so the
    divisors 1, 2, 3 are all seen; `upcast`: reorder_and_upcast_attn (float32 arithmetic, the same numbers)."""
    cfg = transformers.GPT2Config(
        vocab_size=VOCAB,
        n_positions=32,
        n_embd=32,
        n_layer=3,
        n_head=4,
        scale_attn_by_inverse_layer_idx=True,
        reorder_and_upcast_attn=upcast,
    )
    return _model(transformers.GPT2LMHeadModel, cfg)


# decoder families and mechanisms beyond the first seven; family_cases.py merges them with the other fixture
# modules' into FAMILY_CASES. name -> (case, the mechanisms it exercises)
DECODER_CASES = {
    "llama-rope-linear": (
        Case("llama-rope-linear", lambda: llama_rope("linear"), "decoder-only", final_norm_in_hidden=True),
        "rope_scaling linear",
    ),
    "llama-rope-dynamic": (
        Case("llama-rope-dynamic", lambda: llama_rope("dynamic"), "decoder-only", final_norm_in_hidden=True),
        "rope_scaling dynamic",
    ),
    "llama-rope-llama3": (
        Case("llama-rope-llama3", lambda: llama_rope("llama3"), "decoder-only", final_norm_in_hidden=True),
        "rope_scaling llama3 (Llama-3.1/3.2)",
    ),
    "llama-rope-yarn": (
        Case("llama-rope-yarn", lambda: llama_rope("yarn"), "decoder-only", final_norm_in_hidden=True),
        "rope_scaling yarn + attention factor",
    ),
    "qwen2-yarn": (Case("qwen2-yarn", qwen2_yarn, "decoder-only", final_norm_in_hidden=True), "Qwen2.5 yarn, tied"),
    "gpt2-inverse-layer": (
        Case("gpt2-inverse-layer", gpt2_inverse_layer, "decoder-only", final_norm_in_hidden=True),
        "scale_attn_by_inverse_layer_idx",
    ),
    "gpt2-upcast": (
        Case("gpt2-upcast", lambda: gpt2_inverse_layer(upcast=True), "decoder-only", final_norm_in_hidden=True),
        "+ reorder_and_upcast_attn",
    ),
    "mistral": (
        Case("mistral", mistral, "decoder-only", final_norm_in_hidden=True),
        "sliding-window attention (W = 3), GQA",
    ),
    "qwen2-sliding": (
        Case("qwen2-sliding", qwen2_sliding, "decoder-only", final_norm_in_hidden=True),
        "sliding window on every layer (W = 4)",
    ),
    "phi3": (Case("phi3", phi3, "decoder-only", final_norm_in_hidden=True), "fused qkv_proj, gate_up_proj"),
    "gemma": (
        Case("gemma", gemma, "decoder-only", final_norm_in_hidden=True),
        "embeddings × √d, RMSNorm (1 + w), tanh-GELU gated FFN",
    ),
    "stablelm": (
        Case("stablelm", stablelm, "decoder-only", final_norm_in_hidden=True),
        "LayerNorm, partial rotary (½ of each head), Q/K/V biases",
    ),
    "olmo": (Case("olmo", olmo, "decoder-only", final_norm_in_hidden=True), "non-parametric LayerNorm"),
    "gpt_neox": (
        Case("gpt_neox", gpt_neox, "decoder-only", final_norm_in_hidden=True),
        "parallel residual, partial rotary (rotary_pct ½), fused QKV per head",
    ),
    "gpt_neox-sequential": (
        Case("gpt_neox-sequential", lambda: gpt_neox(parallel=False), "decoder-only", final_norm_in_hidden=True),
        "use_parallel_residual false",
    ),
    "phi": (
        Case("phi", phi, "decoder-only", final_norm_in_hidden=True),
        "parallel attention + MLP on one LayerNorm, partial rotary ½, logits bias",
    ),
    "gptj": (
        Case("gptj", gptj, "decoder-only", final_norm_in_hidden=True),
        "parallel on one LayerNorm, interleaved partial rotary (rotary_dim 4 of 8)",
    ),
    "opt": (
        Case("opt", opt, "decoder-only", final_norm_in_hidden=True),
        "learned positions offset 2, ReLU, pre-norm + final LayerNorm",
    ),
    "opt-post-norm": (
        Case("opt-post-norm", lambda: opt(pre=False), "decoder-only"),
        "do_layer_norm_before false: post-norm, no final norm",
    ),
}
