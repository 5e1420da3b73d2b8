"""load_checkpoint: pick the reader by what the file is (.safetensors, or a PyTorch .pt/.pth)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.native import load_safetensors
from attnlab.checkpoints.torch_files import ZIP_MAGIC, load_torch_file
from attnlab.engine.live import LiveModel
from attnlab.limits import cut, excerpt

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")


def load_checkpoint(path, device="cpu") -> LiveModel:
    """A whole LiveModel, or one CheckpointError listing everything wrong with the file."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes) or not str(path):
        raise CheckpointError(f"Cannot load a checkpoint from {excerpt(path)}: give the path of a .safetensors or "
                              ".pt file")
    path = Path(path).expanduser()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: there is no file at that path") from None
    except OSError as e:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {e.strerror or e}") from e
    if stat.S_ISDIR(mode):
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: it is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: it is not a regular file (a device, "
                              "pipe or socket), so it cannot be a checkpoint")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {e.strerror or e}") from e
    try:
        if path.suffix.lower() in TORCH_SUFFIXES or head == ZIP_MAGIC:
            return load_torch_file(path, device=device)
        return load_safetensors(path, device=device)
    except CheckpointError:
        raise
    except (RecursionError, MemoryError, RuntimeError, TypeError, ValueError, OSError, EOFError) as e:
        # the readers check everything they know of; anything else still becomes one readable message
        kind = "it needs more memory than is available" if isinstance(e, MemoryError) or "alloc" in str(e) \
            else f"it could not be read ({type(e).__name__}: {cut(str(e).splitlines()[0] if str(e) else '', 200)})"
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {kind}") from e
