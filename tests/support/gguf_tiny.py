"""Tiny GGUF files written in the tests (never downloaded): a tiny random transformers model converted the way
llama.cpp's convert_hf_to_gguf.py converts it (Llama's Q/K rows permuted, Gemma's norms stored as 1 + w, tied
output left out), its 2-D weights in one ggml type, and a small tokenizer in the metadata, all through the gguf
package's writer (GGUFWriter). Types the package can quantize (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16) are quantized
from the model's weights by gguf.quants.quantize; for the K-quants, which it can only dequantize, valid random
blocks of the right shape are written instead (their fp16 scales set so the values are weights-sized).
Used by test_gguf_models.py and benchmarks/gguf_bench.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter
from gguf.quants import dequantize, quantize

QUANTIZABLE = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")
K_QUANTS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
# where the fp16 scale fields (d, dmin) of a K-quant block are (gguf.quants' dequantize_blocks)
K_SCALES = {"Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}
HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 256, 256, 4, 2, 2  # rows of 256: every K-quant block fits


# ---- tokenizers in the metadata ------------------------------------------------------------------------------
def spm_vocab(specials: list[str]) -> tuple[list[str], list[float], list[int]]:
    """A SentencePiece-style vocabulary: the specials, the 256 byte pieces, then pieces scored by merge order."""
    pieces = ["\u2581", "\u2581t", "he", "\u2581the", "\u2581c", "at", "\u2581cat", "\u2581s", "\u2581sat", "o", "n"]
    pieces += ["\u2581on", "\u2581m", "\u2581ma", "\u2581mat", "a", "t", "h", "e", "c", "s", "m", "r", "d", "i", "g"]
    tokens = [*specials, *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    scores = [0.0] * len(specials) + [0.0] * 256 + [-float(i) for i in range(len(pieces))]
    types = [3] * len(specials) + [6] * 256 + [1] * len(pieces)
    types[specials.index("<unk>")] = 2
    return tokens, scores, types


def bpe_vocab() -> tuple[list[str], list[str], list[int]]:
    """A byte-level BPE vocabulary (GPT-2's byte alphabet) with merges, ending in <|endoftext|>."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    alphabet = list(bytes_to_unicode().values())
    merges = ["Ġ t", "h e", "Ġt he", "Ġ c", "a t", "Ġc at", "Ġ s", "Ġs at", "Ġ o", "Ġo n", "Ġ m", "Ġm at"]
    tokens = alphabet + ["".join(m.split()) for m in merges] + ["<|endoftext|>"]
    return tokens, merges, [1] * (len(tokens) - 1) + [3]


def write_tokenizer(w: GGUFWriter, arch: str) -> int:
    """The tokenizer metadata for `arch`; returns the vocabulary's size."""
    if arch in ("qwen2", "qwen3", "gpt2"):
        tokens, merges, types = bpe_vocab()
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2" if arch == "gpt2" else "qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_eos_token_id(len(tokens) - 1)
        w.add_pad_token_id(len(tokens) - 1)
        w.add_add_bos_token(False)
        return len(tokens)
    gemma = arch.startswith("gemma")
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"] if gemma else ["<unk>", "<s>", "</s>"]
    tokens, scores, types = spm_vocab(specials)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(tokens.index("<bos>" if gemma else "<s>"))
    w.add_eos_token_id(tokens.index("<eos>" if gemma else "</s>"))
    w.add_unk_token_id(tokens.index("<unk>"))
    if gemma or arch == "phi3":  # Phi3Config's default pad id (32000) is past a tiny vocabulary
        w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    return len(tokens)


# ---- the model -------------------------------------------------------------------------------------------------
def hf_model(arch: str, vocab: int, rope_scaling: dict | None = None) -> torch.nn.Module:
    """A tiny random transformers model of the family `arch` (weights drawn wider than the 0.02 init)."""
    common = dict(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        intermediate_size=FFN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=64,
    )
    if arch == "llama":
        rope = {"rope_type": "default", "rope_theta": 10000.0} if rope_scaling is None else rope_scaling
        config = transformers.LlamaConfig(**common, rms_norm_eps=1e-5, rope_parameters=rope, tie_word_embeddings=False)
        cls = transformers.LlamaForCausalLM
    elif arch == "qwen2":
        config = transformers.Qwen2Config(**common, rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True)
        cls = transformers.Qwen2ForCausalLM
    elif arch == "gemma":
        config = transformers.GemmaConfig(**common, head_dim=64)
        cls = transformers.GemmaForCausalLM
    elif arch == "gemma2":
        config = transformers.Gemma2Config(**common, head_dim=64, sliding_window=16)
        cls = transformers.Gemma2ForCausalLM
    elif arch == "gemma3":
        config = transformers.Gemma3TextConfig(**common, head_dim=64, sliding_window=16)
        cls = transformers.Gemma3ForCausalLM
    elif arch == "qwen3":
        # head_dim 128: transformers' GGUF mapping leaves qwen3's key_length unread (Qwen3Config's default 128)
        config = transformers.Qwen3Config(**common, head_dim=128, rope_theta=1e6, tie_word_embeddings=True)
        cls = transformers.Qwen3ForCausalLM
    elif arch == "phi3":
        config = transformers.Phi3Config(**common, rope_theta=10000.0, tie_word_embeddings=False, pad_token_id=0)
        cls = transformers.Phi3ForCausalLM
    elif arch == "gpt2":
        config = transformers.GPT2Config(
            # 1024 positions: transformers' GGUF mapping reads context_length as n_ctx, not n_positions
            vocab_size=vocab,
            n_embd=HIDDEN,
            n_layer=LAYERS,
            n_head=HEADS,
            n_positions=1024,
            n_inner=4 * HIDDEN,
        )
        cls = transformers.GPT2LMHeadModel
    else:
        raise ValueError(arch)
    torch.manual_seed(0)
    model = cls(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            norm = "norm" in name or ".ln_" in name
            p.normal_(
                0.0 if norm and arch.startswith("gemma") else 1.0 if norm and name.endswith("weight") else 0.0, 0.1
            )
    return model


def gguf_tensors(arch: str, model: torch.nn.Module) -> dict[str, np.ndarray]:
    """GGUF name -> float32 values, converted as llama.cpp's convert_hf_to_gguf.py converts them: names by the gguf
    package's own TensorNameMap, Llama's Q/K rows permuted, Gemma's norms + 1, GPT-2's Conv1D weights transposed,
    a tied output left out."""
    from gguf import MODEL_ARCH, get_tensor_name_map

    cfg = model.config
    names = get_tensor_name_map(MODEL_ARCH[arch.upper()], cfg.num_hidden_layers)
    out = {}
    for name, value in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        base, _, kind = name.rpartition(".")
        gguf_name = f"{names.get_name(base)}.{kind}"
        value = value.detach().float().numpy()
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            value = permute(value, cfg.num_attention_heads if "q_proj" in name else cfg.num_key_value_heads)
        if arch.startswith("gemma") and gguf_name.endswith("norm.weight"):
            value = value + 1.0
        if arch == "gpt2" and gguf_name.endswith(
            ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")
        ):
            value = value.T.copy()
        out[gguf_name] = value
    return out


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's LlamaModel.permute: each head's rotary halves interleaved row by row."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def encoded(values: np.ndarray, qtype_name: str, rng: np.random.Generator) -> tuple[np.ndarray, GGMLQuantizationType]:
    """(the bytes or values to write, their ggml type): 1-D tensors stay F32, as llama.cpp keeps them."""
    qtype = GGMLQuantizationType[qtype_name]
    if values.ndim == 1 or qtype_name == "F32":
        return values.astype(np.float32), GGMLQuantizationType.F32
    if qtype_name in QUANTIZABLE:
        return quantize(values.astype(np.float32), qtype), qtype
    return random_k_blocks(values.shape, qtype_name, rng), qtype


def random_k_blocks(shape: tuple[int, ...], qtype_name: str, rng: np.random.Generator) -> np.ndarray:
    """Valid random blocks of a K-quant for a tensor of `shape`, scaled so the values spread about ±0.1."""
    qtype = GGMLQuantizationType[qtype_name]
    block, size = GGML_QUANT_SIZES[qtype]
    rows, n = int(np.prod(shape[:-1])), shape[-1]
    raw = rng.integers(0, 256, size=(rows * n // block, size), dtype=np.uint8)
    for at in K_SCALES[qtype_name]:
        raw[:, at : at + 2] = np.frombuffer(np.float16(1.0).tobytes(), dtype=np.uint8)
    spread = float(np.abs(dequantize(raw, qtype)).max()) or 1.0
    for at in K_SCALES[qtype_name]:
        scale = np.float16(0.1 / spread) * rng.uniform(0.5, 1.5, size=raw.shape[0]).astype(np.float16)
        raw[:, at : at + 2] = scale.view(np.uint8).reshape(-1, 2)
    return raw.reshape(*shape[:-1], n // block * size)


def rope_freqs(rope: dict, head_dim: int) -> np.ndarray:
    """llama.cpp's rope_freqs tensor for Llama 3's rope scaling (convert_hf_to_gguf.py, LlamaModel): the factor
    each rotary frequency is divided by."""
    base, factor = rope["rope_theta"], rope["factor"]
    low, high, old = rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
    out = []
    for freq in 1.0 / base ** (np.arange(0, head_dim, 2) / head_dim):
        wavelen = 2 * np.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_gguf(
    folder: Path, arch: str, qtype_name: str, seed: int = 0, rope_scaling: dict | None = None
) -> tuple[Path, torch.nn.Module] | Path:
    """A tiny `arch` model in `qtype_name`, written to folder/tiny-<arch>-<type>.gguf; returns the path (and the
    transformers model it was converted from, when `rope_scaling` (Llama 3's) is given or for Gemma, whose GGUF
    files transformers does not read)."""
    path = folder / f"tiny-{arch}-{qtype_name}.gguf"
    w = GGUFWriter(str(path), arch)
    w.add_name(f"tiny {arch}")
    w.add_file_type(1 if qtype_name == "F16" else 0)
    vocab = write_tokenizer(w, arch)
    model = hf_model(arch, vocab, rope_scaling)
    cfg = model.config
    if arch == "gpt2":
        w.add_context_length(cfg.n_positions)
        w.add_embedding_length(cfg.n_embd)
        w.add_block_count(cfg.n_layer)
        w.add_feed_forward_length(cfg.n_inner)
        w.add_head_count(cfg.n_head)
        w.add_layer_norm_eps(cfg.layer_norm_epsilon)
        return write_tensors(w, arch, model, qtype_name, seed, path)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if arch in ("gemma", "gemma2", "gemma3", "qwen3"):
        w.add_key_length(cfg.head_dim)
        w.add_value_length(cfg.head_dim)
    if arch in ("gemma2", "gemma3"):
        w.add_sliding_window(cfg.sliding_window)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
    else:
        rope = cfg.rope_parameters
        w.add_rope_freq_base(rope.get("full_attention", rope)["rope_theta"])  # Gemma 3: the global layers' base
    if arch == "llama":
        w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    if rope_scaling is not None:
        w.add_tensor("rope_freqs.weight", rope_freqs(rope_scaling, cfg.hidden_size // cfg.num_attention_heads))
    if rope_scaling is not None or arch == "gemma":
        return write_tensors(w, arch, model, qtype_name, seed, path), model
    return write_tensors(w, arch, model, qtype_name, seed, path)


def write_tensors(w: GGUFWriter, arch: str, model: torch.nn.Module, qtype_name: str, seed: int, path: Path) -> Path:
    rng = np.random.default_rng(seed)
    for name, values in gguf_tensors(arch, model).items():
        data, qtype = encoded(values, qtype_name, rng)
        w.add_tensor(name, data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
