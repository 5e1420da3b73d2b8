"""A GGUF file's architecture as a Hugging Face one: its metadata as a config.json dict and its tensor names as
the state-dict names transformers gives them, so the family converters in checkpoints/hf/ take it from there.

The conventions are transformers' own GGUF loader's (integrations/ggml.py GGUF_CONFIG_MAPPING,
modeling_gguf_pytorch_utils.py load_gguf_checkpoint and its TensorProcessors): llama.cpp keys renamed
(`llama.embedding_length` -> hidden_size, …), tie_word_embeddings when the file has no output.weight, the
vocabulary's size from the token list when the file does not state it, a "llama" file named Mistral read as
mistral, gemma3 read as gemma3_text; Llama's Q and K rows un-permuted (llama.cpp interleaves the rotary halves),
Gemma's norm weights stored as 1 + w by llama.cpp given back as w, GPT-2's Conv1D weights transposed back.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from attnlab.checkpoints.errors import CheckpointError

# architecture -> the model_type attnlab's converters read it as
MODEL_TYPES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
    "gpt2": "gpt2",
}
SUPPORTED_ARCHITECTURES = tuple(MODEL_TYPES)
# llama.cpp's key (after "<arch>.") -> the config.json key, as transformers' GGUF_CONFIG_MAPPING has them
DECODER_KEYS = {
    "context_length": "max_position_embeddings",
    "block_count": "num_hidden_layers",
    "feed_forward_length": "intermediate_size",
    "embedding_length": "hidden_size",
    "rope.freq_base": "rope_theta",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "vocab_size": "vocab_size",
}
ARCH_KEYS: dict[str, dict[str, str]] = {
    "llama": {**DECODER_KEYS, "rope.dimension_count": "head_dim"},
    "mistral": {**DECODER_KEYS, "rope.dimension_count": "head_dim"},
    "qwen2": DECODER_KEYS,
    "qwen3": {**DECODER_KEYS, "attention.key_length": "head_dim"},
    "gemma": {**DECODER_KEYS, "attention.key_length": "head_dim"},
    "gemma2": {
        **DECODER_KEYS,
        "attention.key_length": "head_dim",
        "attention.sliding_window": "sliding_window",
        "attn_logit_softcapping": "attn_logit_softcapping",
        "final_logit_softcapping": "final_logit_softcapping",
    },
    "gemma3": {**DECODER_KEYS, "attention.key_length": "head_dim", "attention.sliding_window": "sliding_window"},
    "phi3": DECODER_KEYS,
    "gpt2": {
        "block_count": "n_layer",
        "context_length": "n_positions",
        "embedding_length": "n_embd",
        "feed_forward_length": "n_inner",
        "attention.head_count": "n_head",
        "attention.layer_norm_epsilon": "layer_norm_epsilon",
    },
}
# GGUF tensor name (after "blk.N.") -> transformers' (after "model.layers.N."), the Llama-like families
LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
SANDWICH_NAMES = {  # Gemma 2 and 3: a norm on each side of each sub-layer
    **LAYER_NAMES,
    "ffn_norm": "pre_feedforward_layernorm",
    "post_attention_norm": "post_attention_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm",
}
PHI3_NAMES = {**LAYER_NAMES, "attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"}
GPT2_NAMES = {
    "attn_norm": "ln_1",
    "attn_qkv": "attn.c_attn",
    "attn_output": "attn.c_proj",
    "ffn_norm": "ln_2",
    "ffn_up": "mlp.c_fc",
    "ffn_down": "mlp.c_proj",
}
GPT2_TRANSPOSED = ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")
_BLOCK = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


def architecture(metadata: dict[str, Any]) -> str:
    """general.architecture as attnlab reads it (a "llama" file whose name says Mistral is mistral, as in
    transformers), or CheckpointError naming an architecture attnlab does not open."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        raise CheckpointError("the GGUF file has no general.architecture, so its model cannot be known")
    name = metadata.get("general.name")
    if arch == "llama" and isinstance(name, str) and "mistral" in name.lower():
        return "mistral"
    if arch not in MODEL_TYPES:
        raise CheckpointError(
            f"the GGUF file's architecture is {arch!r}; attnlab opens GGUF files of these architectures: "
            + ", ".join(SUPPORTED_ARCHITECTURES)
        )
    return arch


def hf_config(metadata: dict[str, Any], arch: str, tensor_names: list[str]) -> dict[str, Any]:
    """The config.json dict the metadata describes (transformers' keys and conventions)."""
    prefix = metadata.get("general.architecture", arch)
    config: dict[str, Any] = {"model_type": MODEL_TYPES[arch]}
    for key, hf_key in ARCH_KEYS[arch].items():
        value = metadata.get(f"{prefix}.{key}")
        if value is not None and not hasattr(value, "__len__"):
            config[hf_key] = value.item() if hasattr(value, "item") else value
    config["tie_word_embeddings"] = "output.weight" not in tensor_names
    tokens = metadata.get("tokenizer.ggml.tokens")
    if "vocab_size" not in config and tokens is not None:
        config["vocab_size"] = len(tokens)
    if arch == "gpt2":
        config["activation_function"] = "gelu_new"
    config.update(layers_and_rope(metadata, arch, prefix, config))
    for name, key in (("bos", "bos_token_id"), ("eos", "eos_token_id"), ("padding", "pad_token_id")):
        value = metadata.get(f"tokenizer.ggml.{name}_token_id")
        if isinstance(value, int):
            config[key] = value
    return config


def layers_and_rope(metadata: dict[str, Any], arch: str, prefix: str, config: dict[str, Any]) -> dict[str, Any]:
    """What llama.cpp fixes per architecture rather than writing it: Gemma 2's local and global layers alternate,
    Gemma 3's every 6th layer is global (the config classes' defaults, written out as layer_types); and the
    rope scaling the file states ({arch}.rope.scaling.type / factor / original_context_length), which
    transformers' GGUF loader leaves unread."""
    out: dict[str, Any] = {}
    n = config.get("num_hidden_layers")
    if arch in ("gemma2", "gemma3") and isinstance(n, int) and 0 < n <= 4096:
        every = 2 if arch == "gemma2" else 6
        out["layer_types"] = ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n)]
    kind = metadata.get(f"{prefix}.rope.scaling.type")
    scaling: dict[str, Any] = {}
    if isinstance(kind, str) and kind != "none":
        scaling["rope_type"] = kind
        factor, original = (metadata.get(f"{prefix}.rope.scaling.{k}") for k in ("factor", "original_context_length"))
        if isinstance(factor, (int, float)):
            scaling["factor"] = float(factor)
        if isinstance(original, int) and original > 0:
            scaling["original_max_position_embeddings"] = original
    if arch == "gemma3":
        full = {"rope_theta": config.get("rope_theta", 1_000_000.0), **scaling}
        out["rope_parameters"] = {"full_attention": full, "sliding_attention": {"rope_theta": 10_000.0}}
    elif scaling:
        out["rope_scaling"] = scaling
    return out


def llama3_factors(base: float, head_dim: int, factor: float, low: float, high: float, original: int) -> np.ndarray:
    """llama.cpp's rope_freqs for Llama 3's rope scaling (convert_hf_to_gguf.py, LlamaModel): what each rotary
    frequency is divided by. [head_dim / 2]"""
    freqs = 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2 * math.pi / freqs
    smooth = (original / wavelen - low) / (high - low)
    middle = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelen < original / high, 1.0, np.where(wavelen > original / low, factor, middle))


def llama3_rope(factors: np.ndarray, config: dict[str, Any]) -> dict[str, Any] | None:
    """The rope_scaling (transformers' "llama3") whose factors are the file's rope_freqs tensor, or None when no
    Llama 3 setting gives them. The file keeps only the factors; the settings are found by trying Llama 3.1's
    and 3.2's (low 1, high 4, from 8192 positions) and a few others, with the largest factor as `factor`."""
    base = float(config.get("rope_theta", 10000.0))
    heads, d = config.get("num_attention_heads"), config.get("hidden_size")
    head_dim = config.get("head_dim") or (d // heads if isinstance(d, int) and isinstance(heads, int) and heads else 0)
    if not isinstance(head_dim, int) or factors.shape != (head_dim // 2,) or not np.isfinite(factors).all():
        return None
    factor = float(factors.max())
    for low, high, original in itertools.product((1.0, 2.0), (4.0, 8.0), (8192, 4096, 16384, 32768)):
        if np.allclose(llama3_factors(base, head_dim, factor, low, high, original), factors, rtol=1e-4):
            return {
                "rope_type": "llama3",
                "factor": factor,
                "low_freq_factor": low,
                "high_freq_factor": high,
                "original_max_position_embeddings": original,
            }
    return None


def hf_name(arch: str, name: str) -> str | None:
    """transformers' state-dict name for the GGUF tensor `name` (None: not a tensor of this architecture)."""
    if arch == "gpt2":
        top = {
            "token_embd.weight": "transformer.wte.weight",
            "position_embd.weight": "transformer.wpe.weight",
            "output_norm.weight": "transformer.ln_f.weight",
            "output_norm.bias": "transformer.ln_f.bias",
            "output.weight": "lm_head.weight",
        }
        prefix, names = "transformer.h", GPT2_NAMES
    else:
        top = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
        top["output.weight"] = "lm_head.weight"
        names = SANDWICH_NAMES if arch in ("gemma2", "gemma3") else PHI3_NAMES if arch == "phi3" else LAYER_NAMES
        prefix = "model.layers"
    if name in top:
        return top[name]
    m = _BLOCK.fullmatch(name)
    if m is None or m.group(2) not in names:
        return None
    return f"{prefix}.{m.group(1)}.{names[m.group(2)]}.{m.group(3)}"


def processor(arch: str, config: dict[str, Any]) -> Callable[[str, torch.Tensor], torch.Tensor]:
    """What turns one dequantized GGUF tensor back into transformers' (the name is the GGUF one)."""
    if arch in ("llama", "mistral"):
        heads = config.get("num_attention_heads")
        kv_heads = config.get("num_key_value_heads", heads)

        def llama(name: str, t: torch.Tensor) -> torch.Tensor:
            if isinstance(heads, int) and isinstance(kv_heads, int) and (".attn_q." in name or ".attn_k." in name):
                return unpermute(t, heads if ".attn_q." in name else kv_heads)
            return t

        return llama
    if arch in ("gemma", "gemma2", "gemma3"):
        return lambda name, t: t.sub_(1.0) if name.endswith("norm.weight") else t  # llama.cpp stored 1 + w
    if arch == "gpt2":
        return lambda name, t: t.t().contiguous() if name.endswith(GPT2_TRANSPOSED) else t
    return lambda name, t: t


def changes_values(arch: str, name: str) -> bool:
    """Whether `processor` computes on the tensor (Gemma's norms: 1 + w back to w), so it is dequantized to
    float32 first and rounded once, after; the others are only reordered."""
    return arch in ("gemma", "gemma2", "gemma3") and name.endswith("norm.weight")


def unpermute(t: torch.Tensor, n_head: int) -> torch.Tensor:
    """Undo llama.cpp's permute of a Q or K projection: within each head the rows come as pairs (r, r + d/2)
    interleaved; transformers' half-split rotary wants the two halves one after the other.
    t: [n_head · head_dim, …] -> the same shape."""
    if t.shape[0] % (2 * n_head):
        raise CheckpointError(f"a Q/K projection of {t.shape[0]} rows does not split into {n_head} heads")
    dim = t.shape[0] // n_head // 2
    return t.reshape(n_head, dim, 2, *t.shape[1:]).transpose(1, 2).reshape(t.shape).contiguous()
