"""The native checkpoint: one .safetensors file (see docs/checkpoint-format.md).

Tensors: `module.checkpoint_tensors()` (tied/shared weights once). Metadata (str -> str): format, config,
src_tokenizer, tgt_tokenizer, name, metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from attnlab.checkpoints.assemble import FORMAT, assemble
from attnlab.checkpoints.errors import CheckpointError, Problems
from attnlab.checkpoints.header import read_layout, short_reason
from attnlab.engine.live import LiveModel
from attnlab.fileio import WriteError, atomic_write

# facts about one loading (or one snapshot of the training), never written back
RUN_ONLY_METADATA = ("notices", "notice", "run_notices", "snapshots_file", "training_step", "hf_cache")


def checkpoint_metadata(model: LiveModel) -> dict[str, str]:
    meta = {"format": FORMAT, "config": model.config.to_json(), "name": str(model.name)}
    if model.src_tokenizer is not None:
        meta["src_tokenizer"] = model.src_tokenizer.to_json()
    if model.tgt_tokenizer is not None:
        meta["tgt_tokenizer"] = model.tgt_tokenizer.to_json()
    extra = {k: v for k, v in model.metadata.items() if k not in RUN_ONLY_METADATA}
    if extra:
        meta["metadata"] = json.dumps(extra, ensure_ascii=False, default=str)
    return meta


def save_checkpoint(model: LiveModel, path: str | os.PathLike[str]) -> Path:
    """Write `model` to `path` (.safetensors). Written to a temporary file first, so a failure never leaves
    a half-written checkpoint in place of a good one."""
    path = Path(path)
    if path.suffix != ".safetensors":
        raise CheckpointError(
            f"Cannot save to {str(path)!r}: attnlab writes .safetensors files; give a name ending in .safetensors"
        )
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in model.module.checkpoint_tensors().items()}
    try:
        atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=checkpoint_metadata(model)))
    except WriteError as e:
        raise CheckpointError(f"Cannot save to {str(path)!r}: {str(e).split(': ', 1)[-1]}") from e
    return path


def read_tensors(path: Path, names: Iterable[str], problems: Problems) -> dict[str, torch.Tensor] | None:
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            return {name: f.get_tensor(name) for name in names}
    except Exception as e:  # safetensors raises its own error types
        problems.add(f"the tensor data could not be read ({short_reason(e)})")
        return None


def load_safetensors(path: Path, device: str = "cpu", dtype: str | None = None) -> LiveModel:
    problems = Problems(path)
    layout = read_layout(path, problems)
    if layout is None:  # read_layout has said why
        raise problems.error()
    meta = layout.metadata
    if not meta or not ({"format", "config"} & set(meta)):
        problems.add(
            "the file has no attnlab metadata (format, config, tokenizers): it is a plain "
            "safetensors file; docs/checkpoint-format.md explains how to add what attnlab needs"
        )
        problems.raise_if_any()
    fmt = meta.get("format")
    if fmt is None:
        problems.add(f"the metadata has no 'format' entry (expected {FORMAT!r})")
    elif fmt != FORMAT:
        problems.add(f"the file's format is {fmt!r}, which this version of attnlab cannot read (it reads {FORMAT!r})")
    # a damaged layout is already reported; then the tensors are not read (and not compared)
    tensors = read_tensors(path, layout.entries, problems) if layout.complete else None
    return assemble(
        problems,
        config_value=meta.get("config"),
        tensors=tensors,
        src_json=meta.get("src_tokenizer"),
        tgt_json=meta.get("tgt_tokenizer"),
        name=meta.get("name") or path.stem,
        metadata_value=meta.get("metadata"),
        device=device,
        dtype=dtype,
    )
