"""nanoGPT checkpoints (github.com/karpathy/nanoGPT): the ckpt.pt that its train.py saves.

    {"model": state_dict, "model_args": {n_layer, n_head, n_embd, block_size, bias, vocab_size, dropout},
     "optimizer": ..., "iter_num": int, "best_val_loss": ..., "config": {...}}

Keys may carry torch.compile's "_orig_mod." prefix. The GPT is decoder-only with learned positions, pre-norm
blocks, a final LayerNorm, exact GELU, a 4·n_embd MLP and an output layer tied to the token embedding.
Tensor names map as in docs/checkpoint-format.md ("nanoGPT"). Its tokenizer: meta.pkl beside the checkpoint
(a character vocabulary, read as plain data only), a tokenizer the user names, or token ids shown as numbers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from attnlab.bounded_read import FileRefused, confined, read_bytes
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.file_checks import has_file
from attnlab.checkpoints.plain_pickle import MAX_BYTES, load_plain_pickle
from attnlab.engine.config import ModelConfig
from attnlab.engine.hf_tokenizer import CharVocabTokenizer, NumberTokenizer
from attnlab.engine.tokenizer import Tokenizer

ARGS = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")
NO_VOCABULARY_NOTICE = (
    "This nanoGPT checkpoint has no meta.pkl beside it and no tokenizer was given "
    "(--tokenizer), so tokens are shown as their ids (#0, #1, …); type ids such as "
    "'#17 #4' to feed them."
)
_BLOCK = {
    "ln_1": "norm1",
    "ln_2": "norm2",
    "attn.c_proj": "self_attn.w_o",
    "mlp.c_fc": "ffn.lin1",
    "mlp.c_proj": "ffn.lin2",
}
_LAYER = re.compile(r"^transformer\.h\.(\d+)\.(.+)\.(weight|bias)$")


def is_nanogpt(obj: object) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("model_args"), dict) and isinstance(obj.get("model"), dict)


def nanogpt_config(args: dict, problems: Problems) -> ModelConfig | None:
    missing = [k for k in ARGS if not isinstance(args.get(k), int) or isinstance(args.get(k), bool)]
    if missing:
        problems.add("model_args lacks whole-number " + ", ".join(missing))
        return None
    below = [f"{k} {args[k]:,}" for k in ARGS if args[k] < 1]
    if below:
        problems.add("model_args sizes must be at least 1, not " + ", ".join(below))
        return None
    d = args["n_embd"]
    config = ModelConfig(
        arch="decoder-only",
        src_vocab_size=args["vocab_size"],
        tgt_vocab_size=args["vocab_size"],
        d_model=d,
        n_heads=args["n_head"],
        d_ff=4 * d,
        n_encoder_layers=0,
        n_decoder_layers=args["n_layer"],
        activation="gelu",
        norm_first=True,
        final_norm=True,
        layer_norm_eps=1e-5,
        positional="learned",
        scale_embedding=False,
        share_embeddings=False,
        tie_output=True,
        bias=bool(args.get("bias", True)),
        max_len=args["block_size"],
    )
    refused = config.problems()  # sizes over attnlab's caps: refused before anything is allocated
    for reason in refused:
        problems.add(f"model_args: {reason}")
    return None if refused else config


def convert_state(state: dict, config: ModelConfig, problems: Problems) -> dict[str, torch.Tensor]:
    """nanoGPT names -> attnlab names. c_attn [3d, d] splits into W_Q, W_K, W_V; LayerNorms without bias get
    zero biases (attnlab's LayerNorm always has one); the causal-mask buffer (attn.bias) is dropped."""
    out: dict[str, torch.Tensor] = {}
    for raw_key, value in state.items():
        key = raw_key.removeprefix("_orig_mod.")
        if key == "transformer.wte.weight":
            out["tgt_embed.weight"] = value
        elif key == "transformer.wpe.weight":
            out["tgt_pos.weight"] = value
        elif key.startswith("transformer.ln_f."):
            out["dec_norm." + key.rsplit(".", 1)[1]] = value
        elif key == "lm_head.weight":
            if "transformer.wte.weight" in state and not torch.equal(value, state["transformer.wte.weight"]):
                problems.add("lm_head.weight differs from transformer.wte.weight, but nanoGPT ties them")
        elif (m := _LAYER.match(key)) is not None:
            layer, module, param = m.groups()
            base = f"decoder.{layer}."
            if module == "attn" and param == "bias" and value.dim() == 4:
                continue  # [1, 1, block, block] causal mask of nanoGPT without flash attention
            if module == "attn.c_attn":
                if value.shape[0] % 3:
                    problems.add(f"{raw_key}: expected 3·n_embd rows (Q, K, V) got {list(value.shape)}")
                    continue
                for part, chunk in zip(("w_q", "w_k", "w_v"), value.chunk(3, dim=0), strict=True):
                    out[f"{base}self_attn.{part}.{param}"] = chunk.contiguous()  # [d, d] / [d]
            elif module in _BLOCK:
                out[f"{base}{_BLOCK[module]}.{param}"] = value
            else:
                out[raw_key] = value  # reported as unexpected by the shape check
        else:
            out[raw_key] = value
    for name in [n for n in out if n.endswith("norm1.weight") or n.endswith("norm2.weight") or n == "dec_norm.weight"]:
        out.setdefault(name[: -len("weight")] + "bias", torch.zeros_like(out[name]))
    return out


def read_meta_pkl(path: Path, problems: Problems) -> CharVocabTokenizer | None:
    """nanoGPT's prepare.py writes {"vocab_size", "itos": {id: char}, "stoi": {char: id}}."""
    try:
        confined(path.parent, path.name, "the vocabulary file")
        meta = load_plain_pickle(read_bytes(path, "the vocabulary file", MAX_BYTES))
    except FileRefused as e:
        problems.add(str(e))
        return None
    except (OSError, ValueError) as e:
        problems.add(f"the vocabulary beside it, {path.name}, cannot be used: {e}")
        return None
    itos = meta.get("itos") if isinstance(meta, dict) else None
    if not isinstance(itos, dict) or not all(isinstance(k, int) and isinstance(v, str) for k, v in itos.items()):
        problems.add(f"{path.name} has no 'itos' mapping of ids to characters")
        return None
    if sorted(itos) != list(range(len(itos))):
        problems.add(f"{path.name}: the ids in 'itos' are not 0 … {len(itos) - 1}")
        return None
    return CharVocabTokenizer([itos[i] for i in range(len(itos))])


def nanogpt_parts(
    obj: dict[str, Any], path: Path, problems: Problems, notices: list[str], tokenizer: Tokenizer | None = None
) -> tuple[ModelConfig | None, dict[str, torch.Tensor] | None, Tokenizer | None, dict[str, Any]]:
    """(config, tensors, tokenizer, metadata) of a loaded ckpt.pt; `tokenizer` is one the user named."""
    config = nanogpt_config(obj["model_args"], problems)
    state = {str(k): v for k, v in obj["model"].items() if isinstance(v, torch.Tensor)}
    tensors = convert_state(state, config, problems) if config is not None else None
    tok = tokenizer
    meta_path = path.parent / "meta.pkl"
    if tok is None and has_file(meta_path.parent, meta_path.name):
        tok = read_meta_pkl(meta_path, problems)
    if tok is None and config is not None:
        tok = NumberTokenizer(config.tgt_vocab_size)
        notices.append(NO_VOCABULARY_NOTICE)
    elif tok is not None and config is not None and tok.vocab_size > config.tgt_vocab_size:
        problems.add(f"the tokenizer has {tok.vocab_size} tokens but the model only {config.tgt_vocab_size}")
    notices.append(
        "Read as a nanoGPT checkpoint: decoder-only, learned positions, pre-norm, final LayerNorm, "
        "exact GELU, output tied to the token embedding."
    )
    settings = {k: {"value": v, "source": "model_args"} for k, v in obj["model_args"].items()}
    metadata = {
        "source": "nanoGPT ckpt.pt",
        "settings": settings,
        "tokenizer": "meta.pkl"
        if meta_path.is_file() and tokenizer is None
        else ("given" if tokenizer is not None else "none (ids shown as numbers)"),
    }
    if NO_VOCABULARY_NOTICE in notices:
        metadata["notice"] = NO_VOCABULARY_NOTICE  # the app's banner
    if isinstance(obj.get("iter_num"), int):
        metadata["iter_num"] = obj["iter_num"]
    return config, tensors, tok, metadata
