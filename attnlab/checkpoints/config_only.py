"""The ModelConfig of a checkpoint read without its weights: from an attnlab .safetensors header, a Hugging
Face folder's config.json, or a bundled model's file. What the command line needs to check a stage name
before the (slow) load; None wherever it cannot be told cheaply (PyTorch files, damaged files), and then the
loader reports what is wrong."""

from __future__ import annotations

import os
from pathlib import Path

from attnlab import limits
from attnlab.bounded_read import confined, read_json
from attnlab.checkpoints.bundled_files import BUNDLED, bundled_path, stand_in_config
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.header import read_layout
from attnlab.checkpoints.hf_cache import resolve_model
from attnlab.engine.config import ModelConfig


def bundled_config(name: str) -> ModelConfig | None:
    """The config of bundled model `name` (its stand-in's while the file is absent)."""
    if name not in BUNDLED:
        return None
    path = bundled_path(name)
    return config_without_weights(path) if path.is_file() else stand_in_config(name)


def config_without_weights(path: str | os.PathLike[str]) -> ModelConfig | None:
    """The config a checkpoint file, model folder or cached model id declares, read without any tensor; None
    when unknown."""
    try:
        where = resolve_model(path)  # a model in the Hugging Face cache by id: its snapshot folder
        if where.is_dir() or where.name == "config.json":
            folder = where if where.is_dir() else where.parent
            return _hf_config(folder / "config.json") if (folder / "config.json").is_file() else None
        if where.is_file() and where.suffix.lower() == ".safetensors":
            if (where.parent / "config.json").is_file() and where.name.startswith("model"):
                return _hf_config(where.parent / "config.json")  # the loader opens the folder too
            return _native_config(where)
    except (OSError, ValueError):  # attnlab's errors (ConfigError, CheckpointError) are ValueErrors
        return None
    return None


def _native_config(path: Path) -> ModelConfig | None:
    layout = read_layout(path, Problems(path))
    text = layout.metadata.get("config") if layout is not None else None
    if not text:
        return None
    config = ModelConfig.from_json(text)
    return None if config.problems() else config


def _hf_config(path: Path) -> ModelConfig | None:
    from attnlab.checkpoints.hf import config_from_hf

    data = read_json(confined(path.parent, path.name, path.name), path.name, limits.MAX_CONFIG_CHARS)
    return config_from_hf(data) if isinstance(data, dict) else None
