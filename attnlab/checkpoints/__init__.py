"""Checkpoints: the native .safetensors format (docs/checkpoint-format.md), safe .pt loading, the bundled
classroom models and random ones. No Qt here.

The names below are imported on first use (PEP 562): they pull in torch (~1.3 s), and the desktop app reads
bundled_files and config_only (plain Python) before its window paints."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnlab.checkpoints.bundled import default_tokenizer, load_bundled, random_model
    from attnlab.checkpoints.bundled_files import BUNDLED
    from attnlab.checkpoints.errors import CheckpointError
    from attnlab.checkpoints.loader import load_checkpoint
    from attnlab.checkpoints.native import save_checkpoint

__all__ = [
    "BUNDLED",
    "CheckpointError",
    "default_tokenizer",
    "load_bundled",
    "load_checkpoint",
    "random_model",
    "save_checkpoint",
]
_HOMES = {
    "BUNDLED": "bundled_files",
    "CheckpointError": "errors",
    "default_tokenizer": "bundled",
    "load_bundled": "bundled",
    "load_checkpoint": "loader",
    "random_model": "bundled",
    "save_checkpoint": "native",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'attnlab.checkpoints' has no attribute {name!r}")
    return getattr(importlib.import_module(f"attnlab.checkpoints.{home}"), name)
