"""A Hugging Face model folder: config.json + weights (+ tokenizer files), read offline, nothing run.

Weights: model.safetensors; sharded model-0000x-of-0000y.safetensors with model.safetensors.index.json;
pytorch_model.bin (or its shards with pytorch_model.bin.index.json) through torch.load(weights_only=True).
Every shard's header is checked (truncated, oversized, names that disagree with the index) before a tensor
is read; the config and weights are turned into attnlab's by `attnlab.checkpoints.hf.convert` (one module per
model_type), whose shapes are checked against the config before anything is built. Any problem: one
CheckpointError listing them all.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from attnlab import limits
from attnlab.bounded_read import MAX_INDEX_BYTES, FileRefused, confined, regular_file_size
from attnlab.checkpoints import quantized
from attnlab.checkpoints.chat_files import chat_metadata
from attnlab.checkpoints.errors import CheckpointError, Problems, name_list
from attnlab.checkpoints.generation_config import generation_defaults
from attnlab.checkpoints.header import read_layout, short_reason
from attnlab.checkpoints.hf.bert import NO_HEAD_NOTE
from attnlab.checkpoints.hf.common import refusal
from attnlab.checkpoints.hf_cache import HF_CACHE_KEY, cached_repo_of, display_name
from attnlab.checkpoints.limits import UNCHECKED_PARAMETERS, check_config_sizes, tensor_layout_problems
from attnlab.checkpoints.quantized_methods import refusal as quantization_refusal
from attnlab.checkpoints.tokenizer_files import folder_tokenizers, read_json_file, tokenizer_at
from attnlab.engine.config import ModelConfig
from attnlab.engine.hf_tokenizer import NumberTokenizer
from attnlab.engine.live import LiveModel
from attnlab.engine.sampling_settings import GENERATION_KEY

SAFETENSORS, SAFETENSORS_INDEX = "model.safetensors", "model.safetensors.index.json"
TORCH_BIN, TORCH_BIN_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"
MAX_WEIGHTS_BYTES = 1 << 50  # a weights file's size is checked against the memory, not here
NO_TOKENIZER_NOTICE = "The folder has no tokenizer files, so tokens are shown as their ids (#0, #1, …)."
# attnlab field -> the config.json keys that set it, in any family (which family reads which is hf/*.py's)
CONFIG_KEYS = {
    "d_model": ("hidden_size", "n_embd", "d_model", "dim"),
    "n_heads": ("num_attention_heads", "n_head", "encoder_attention_heads", "n_heads"),
    "d_ff": ("intermediate_size", "n_inner", "encoder_ffn_dim", "hidden_dim"),
    "n_encoder_layers": ("num_hidden_layers", "encoder_layers", "n_layers", "n_layer"),
    "n_decoder_layers": ("num_hidden_layers", "decoder_layers", "n_layer", "n_layers"),
    "src_vocab_size": ("vocab_size",),
    "tgt_vocab_size": ("vocab_size",),
    "max_len": ("max_position_embeddings", "n_positions"),
    "layer_norm_eps": ("layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps"),
    "activation": ("hidden_act", "activation_function", "activation"),
    "n_kv_heads": ("num_key_value_heads",),
    "rope_theta": ("rope_theta",),
    "type_vocab_size": ("type_vocab_size",),
    "tie_output": ("tie_word_embeddings",),
    "share_embeddings": ("share_encoder_decoder_embeddings",),
    "scale_embedding": ("scale_embedding",),
    "embed_dim": ("embedding_size",),  # ALBERT, ELECTRA (w-bertish)
}


def is_hf_folder(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def hf_api() -> ModuleType:
    """attnlab.checkpoints.hf (the per-model_type converters), or a CheckpointError when it is missing."""
    try:
        from attnlab.checkpoints import hf
    except ImportError as e:
        raise CheckpointError(f"This attnlab cannot convert Hugging Face folders ({e})") from e
    if not hasattr(hf, "convert"):
        raise CheckpointError(
            "This attnlab cannot convert Hugging Face folders (attnlab.checkpoints.hf has no convert)"
        )
    return hf


# ---- weights -----------------------------------------------------------------------------------------
def shard_files(folder: Path, index_name: str, problems: Problems) -> dict[str, list[str]] | None:
    """file -> the tensor names the index puts in it; None when there is no index."""
    if not os.path.lexists(folder / index_name):
        return None
    index = read_json_file(folder / index_name, problems, MAX_INDEX_BYTES)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        if not problems:
            problems.add(f"{index_name} has no weight_map of tensor names to shard files")
        return {}
    if len(weight_map) > limits.MAX_TENSORS:  # refused before a single shard is looked for
        problems.add(
            f"{index_name} lists {len(weight_map):,} tensors; attnlab reads checkpoints of at most "
            f"{limits.MAX_TENSORS:,} tensors"
        )
        return {}
    files: dict[str, list[str]] = {}
    for name, file in weight_map.items():
        files.setdefault(str(file), []).append(str(name))
    outside, missing = [], set()
    for file in files:  # each shard name once: linear in the index
        try:
            if not weight_file(folder, file, f"{index_name} names the shard"):
                missing.add(file)
        except FileRefused as e:
            outside.append(str(e))
    if outside:
        problems.add(outside[0] + (f" (and {len(outside) - 1:,} more such shards)" if len(outside) > 1 else ""))
        return {}
    if missing:
        problems.add(f"{index_name} names shard files that are not in the folder: {name_list(sorted(missing))}")
    return {f: names for f, names in files.items() if f not in missing}


def weight_file(folder: Path, name: str, what: str = "") -> bool:
    """Whether `folder` holds the weights file `name` (False: nothing by that name). A file that is there is
    held to the rule every file of a folder is (bounded_read.confined): inside the folder, or inside its
    cached repository's blobs/; a link leading elsewhere, a FIFO, a device or a folder is refused in one line
    (FileRefused) before it is opened."""
    if not os.path.lexists(folder / name):
        return False
    path = confined(folder, name, what or name)
    regular_file_size(path, name, MAX_WEIGHTS_BYTES)
    return True


def read_safetensors_shards(folder: Path, files: dict[str, list[str] | None], problems: Problems) -> dict:
    """Check every shard's header against the index (and its size), then read the tensors."""
    from safetensors import safe_open

    layouts = {}
    for file, listed in files.items():
        shard = Problems(folder / file)
        layout = read_layout(folder / file, shard)
        for p in shard.items:
            problems.add(f"{file}: {p}")
        if layout is None or not layout.complete:
            continue
        need = max((e["data_offsets"][1] for e in layout.entries.values()), default=0)
        extra = (folder / file).stat().st_size - 8 - _header_bytes(folder / file) - need
        if extra > 0:
            problems.add(
                f"{file}: the file is {extra} bytes longer than its tensors need (oversized: damaged, "
                "or not the shard its header describes)"
            )
            continue
        if listed is not None and set(listed) != set(layout.entries):
            absent = sorted(set(listed) - set(layout.entries))
            stray = sorted(set(layout.entries) - set(listed))
            problems.add(
                f"{file} does not match the index: "
                + "; ".join(
                    part
                    for part in (
                        f"missing {name_list(absent)}" if absent else "",
                        f"not in the index {name_list(stray)}" if stray else "",
                    )
                    if part
                )
            )
            continue
        layouts[file] = layout
    if problems:
        return {}
    tensors: dict[str, torch.Tensor] = {}
    for file, layout in layouts.items():
        try:
            with safe_open(str(folder / file), framework="pt", device="cpu") as f:
                for name in layout.entries:
                    if name in tensors:
                        problems.add(f"tensor {name} is stored twice ({file} and an earlier shard)")
                    tensors[name] = f.get_tensor(name)
        except Exception as e:  # safetensors raises its own error types
            problems.add(f"{file}: the tensor data could not be read ({short_reason(e)})")
    return tensors


def _header_bytes(path: Path) -> int:
    with open(path, "rb") as f:
        return int.from_bytes(f.read(8), "little")


def read_torch_shards(folder: Path, files: list[str], problems: Problems) -> dict:
    from attnlab.checkpoints.torch_files import read_torch_object

    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        shard = Problems(folder / file)
        try:
            obj = read_torch_object(folder / file, shard)
        except CheckpointError:
            problems.add(f"{file}: {shard.items[0] if shard.items else 'unreadable'}")
            continue
        if not isinstance(obj, dict):
            problems.add(f"{file} holds a {type(obj).__name__}, not a dict of tensors")
            continue
        held = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
        odd = tensor_layout_problems(held)  # before any conversion copies or casts them
        if odd:
            problems.add(f"{file}: {odd[0]}")
            continue
        tensors.update(held)
    return tensors


def read_folder_weights(folder: Path, problems: Problems) -> dict[str, torch.Tensor]:
    index = shard_files(folder, SAFETENSORS_INDEX, problems)
    if index is not None:
        return read_safetensors_shards(folder, dict(index), problems)
    if weight_file(folder, SAFETENSORS):
        return read_safetensors_shards(folder, {SAFETENSORS: None}, problems)
    shards = sorted(p.name for p in folder.glob("model-*-of-*.safetensors"))
    if shards:
        problems.add(
            f"the folder has shards ({name_list(shards)}) but no {SAFETENSORS_INDEX} saying which tensor is where"
        )
        return {}
    index = shard_files(folder, TORCH_BIN_INDEX, problems)
    if index is not None:
        return read_torch_shards(folder, list(index), problems)
    if weight_file(folder, TORCH_BIN):
        return read_torch_shards(folder, [TORCH_BIN], problems)
    problems.add(f"the folder has a config.json but no weights ({SAFETENSORS}, its shards, or {TORCH_BIN})")
    return {}


# ---- provenance --------------------------------------------------------------------------------------
def banner_notices(notices: list[str]) -> str:
    """What of a folder's notices the app's banner shows: no tokenizer, no trained output head."""
    said = [NO_TOKENIZER_NOTICE] if NO_TOKENIZER_NOTICE in notices else []
    if NO_HEAD_NOTE in notices:
        said.append(NO_HEAD_NOTE[0].upper() + NO_HEAD_NOTE[1:] + ".")
    return " ".join(said)


def setting_sources(hf_config: dict[str, Any], config: ModelConfig, notes: list[str]) -> dict[str, dict[str, Any]]:
    """attnlab field -> {"value", "source"}: "config.json (key)", "inferred" or "assumed"."""
    out = {}
    model_type = hf_config.get("model_type", "?")
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        keys = [k for k in CONFIG_KEYS.get(field.name, ()) if hf_config.get(k) is not None]
        named = [n for n in notes if field.name in n]
        if keys:
            source = f"config.json ({keys[0]})"
        elif named:
            source = "inferred: " + named[0]
        elif any(k in hf_config for k in CONFIG_KEYS.get(field.name, ())):
            source = "assumed (config.json leaves it empty)"
        else:
            source = f"inferred from model_type {model_type}"
        out[field.name] = {"value": value, "source": source}
    return out


def _said(dequantized: quantized.Dequantization | None) -> str:
    """The banner's sentence for a dequantized folder ('' otherwise)."""
    return "" if dequantized is None else "Weights " + dequantized.text() + "."


# ---- refusals and tokenizers ------------------------------------------------------------------------
def chosen_tokenizers(
    folder: Path, hf_config: dict[str, Any], tokenizer: Any, problems: Problems
) -> tuple[Any, Any, str]:
    """(source, target, description): the folder's own tokenizer files, or the one the user named."""
    if tokenizer is None:
        return folder_tokenizers(folder, hf_config, problems)
    if isinstance(tokenizer, (str, Path)):
        tokenizer = tokenizer_at(tokenizer, problems, str(hf_config.get("model_type", "")))
    return tokenizer, tokenizer, f"--tokenizer {getattr(tokenizer, 'kind', '?')}"


# ---- the whole folder --------------------------------------------------------------------------------
def load_hf_folder(folder: Path, device: str = "cpu", tokenizer: Any = None, dtype: str | None = None) -> LiveModel:
    """`tokenizer`: a path (tokenizer.json or a folder of tokenizer files, read as this model's family reads
    them) or a built Tokenizer, used instead of the folder's own."""
    from attnlab.checkpoints.assemble import build_live_model, build_module, drop_tied_duplicates

    problems = Problems(folder)
    hf_config = read_json_file(folder / "config.json", problems)
    problems.raise_if_any()
    hf = hf_api()
    model_type = hf_config.get("model_type")
    supported = tuple(getattr(hf, "SUPPORTED_MODEL_TYPES", ()))
    if model_type not in supported:
        known = getattr(hf, "NOT_RUNNABLE", {})  # types attnlab knows it cannot run, and why
        why = known.get(model_type) if isinstance(model_type, str) else None
        problems.add(
            f"config.json's model_type is {model_type!r}; "
            + (why or f"attnlab opens these model types: {', '.join(supported)}")
        )
        problems.raise_if_any()
    refused = quantization_refusal(hf_config)  # HQQ, 3-bit GPTQ, …: one line, before any weight is read
    if refused:
        problems.add(refused)
        problems.raise_if_any()
    try:
        hf.config_from_hf(hf_config)  # refuses unsupported options before any weight is read
    except Exception as e:  # the converters raise ValueError / ConfigError / CheckpointError with the reason
        problems.add(refusal(e))
        problems.raise_if_any()
    state = read_folder_weights(folder, problems)
    problems.raise_if_any()
    state, dequantized = quantized.dequantize_state(state, problems, dtype, hf_config)  # by their formulas
    problems.raise_if_any()
    try:
        config, tensors, notes = hf.convert(hf_config, state)
    except Exception as e:  # a tensor the converter cannot place or split: its message says which
        problems.add(f"the weights do not fit config.json: {e}")
        problems.raise_if_any()
    src, tgt, tok_desc = chosen_tokenizers(folder, hf_config, tokenizer, problems)
    notices = list(notes)
    if src is None and not problems:
        src = tgt = NumberTokenizer(config.out_vocab_size)
        notices.append(NO_TOKENIZER_NOTICE)
        tok_desc = "none (ids shown as numbers)"
    for side, tok, size in (("source", src, config.src_vocab_size), ("target", tgt, config.tgt_vocab_size)):
        if tok is not None and tok.vocab_size > size:
            problems.add(f"the {side} tokenizer has {tok.vocab_size} tokens but the model's vocabulary only {size}")
    done = f", {dequantized.text()}" if dequantized is not None else ""  # Model info's "read from"
    metadata = {
        "source": f"Hugging Face folder ({model_type}){done}",
        "model_type": model_type,
        "settings": setting_sources(hf_config, config, notes),
        GENERATION_KEY: generation_defaults(folder, notices),  # the sampling defaults and their sources
        "tokenizer": tok_desc + (f"; specials {src.specials.description}" if src is not None else ""),
    }
    metadata.update(chat_metadata(folder, problems))  # the chat template, when the folder has one
    cached = cached_repo_of(folder)
    if cached is not None:  # a snapshot in the Hugging Face cache: its other revisions may be training steps
        metadata[HF_CACHE_KEY] = {"repo": cached[0], "commit": cached[1], "folder": str(folder)}
    if dequantized is not None:  # the one provenance fact (checkpoints/quantized.py), said in the banner and notes
        metadata[quantized.QUANTIZATION_KEY] = dequantized.fact(folder)
        notices.append(dequantized.text()[0].upper() + dequantized.text()[1:] + ".")
    banner = " ".join(b for b in (banner_notices(notices), _said(dequantized)) if b)
    if banner:
        metadata["notice"] = banner  # the app's banner
    shapes = {n: tuple(t.shape) for n, t in tensors.items()}
    big = not config.problems() and config.parameter_count() > UNCHECKED_PARAMETERS  # a small one is cheap
    too_big = check_config_sizes(config, shapes) if big else []
    for p in too_big:  # the config against the tensors, before anything big is built
        problems.add(p)
    if too_big:
        problems.raise_if_any()
    module = build_module(config) if not config.problems() else None
    if module is not None:
        tensors = drop_tied_duplicates(tensors, module, problems)
    return build_live_model(
        problems,
        config,
        tensors,
        src,
        tgt,
        name=display_name(folder),
        metadata=metadata,
        device=device,
        notices=notices,
        module=module,
        dtype=dtype,
    )
