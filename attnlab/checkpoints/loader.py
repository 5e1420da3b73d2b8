"""load_checkpoint: pick the reader by what the file is (.safetensors, or a PyTorch .pt/.pth)."""

from __future__ import annotations

import os
from pathlib import Path

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.native import load_safetensors
from attnlab.checkpoints.torch_files import ZIP_MAGIC, load_torch_file
from attnlab.engine.live import LiveModel

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")


def load_checkpoint(path: str | os.PathLike[str], device: str = "cpu") -> LiveModel:
    """A whole LiveModel, or one CheckpointError listing everything wrong with the file."""
    path = Path(path).expanduser()
    if not path.exists():
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: there is no file at that path")
    if not path.is_file():
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: it is a folder, not a file")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {e.strerror or e}") from e
    if path.suffix.lower() in TORCH_SUFFIXES or head == ZIP_MAGIC:
        return load_torch_file(path, device=device)
    return load_safetensors(path, device=device)
