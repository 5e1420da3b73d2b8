"""load_checkpoint: pick the reader by what the path is: an attnlab .safetensors, a PyTorch .pt/.pth (attnlab,
nanoGPT or a bare nn.Transformer state dict), a GGUF file (llama.cpp) or a Hugging Face model folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.bounded_read import FileRefused, confined
from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.file_checks import has_file
from attnlab.checkpoints.header import GGUF_MAGIC
from attnlab.checkpoints.hf_cache import resolve_model
from attnlab.checkpoints.native import load_safetensors
from attnlab.checkpoints.snapshots_file import is_snapshots_file, snapshots_path
from attnlab.checkpoints.torch_files import ZIP_MAGIC, load_torch_file
from attnlab.engine.live import LiveModel
from attnlab.engine.tokenizer import Tokenizer
from attnlab.limits import LimitError, cut, excerpt

if TYPE_CHECKING:
    from attnlab.checkpoints.bare import ImportSettings

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")


def load_checkpoint(
    path: str | os.PathLike[str],
    device: str = "cpu",
    *,
    heads: int | None = None,
    norm: str | None = None,
    activation: str | None = None,
    tokenizer: str | Path | Tokenizer | None = None,
    dtype: str | None = None,
) -> LiveModel:
    """A whole LiveModel, or one CheckpointError listing everything wrong with it.

    `path`: an attnlab .safetensors/.pt file, a Hugging Face model folder (config.json + weights), a model
    in the Hugging Face cache by id ('org/name', 'org/name@revision': read offline, see hf_cache.py), a
    nanoGPT ckpt.pt (or its folder), or a bare nn.Transformer state dict. `heads`, `norm` ("pre"/"post") and
    `activation` ("relu"/"gelu") are used only where the weights cannot say them (a bare state dict);
    `tokenizer` (a tokenizer.json or a folder) where the file has none (nanoGPT, bare state dicts), and for a
    Hugging Face folder instead of its own tokenizer files (read as the folder's model family reads them).
    `dtype`: the weights are held as stored (None, "stored": bf16 stays bf16) or in "float32", "bfloat16",
    "float16"; a model that does not fit the memory there is is refused before it is allocated."""
    from attnlab.checkpoints.bare import ImportSettings

    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes) or not str(path):
        raise CheckpointError(
            f"Cannot load a checkpoint from {excerpt(path)}: give the path of a .safetensors or "
            ".pt file, or of a model folder"
        )
    path = resolve_model(path)  # 'org/name[@revision]' that is no path: a model in the Hugging Face cache
    try:
        settings = ImportSettings(heads=heads, norm=norm, activation=activation)
        return _load_path(path, device, settings, tokenizer, dtype)
    except CheckpointError:
        raise
    except (FileRefused, LimitError) as e:  # a bounded reader's one line, naming the file
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {e}") from e
    except (RecursionError, MemoryError, RuntimeError, TypeError, ValueError, OSError, EOFError) as e:
        # the readers check everything they know of; anything else still becomes one readable message
        kind = (
            "it needs more memory than is available"
            if isinstance(e, MemoryError) or "alloc" in str(e)
            else f"it could not be read ({type(e).__name__}: {cut(str(e).splitlines()[0] if str(e) else '', 200)})"
        )
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {kind}") from e


def _load_path(
    path: Path,
    device: str,
    settings: ImportSettings,
    tokenizer: str | Path | Tokenizer | None,
    dtype: str | None = None,
) -> LiveModel:
    """load_checkpoint's dispatch on what `path` is."""
    mode = _stat_mode(path)
    if stat.S_ISDIR(mode) and has_file(path, "adapter_config.json"):  # a LoRA adapter on its base (issue 35)
        from attnlab.checkpoints.adapters import load_adapter_folder

        return load_adapter_folder(path, device=device, tokenizer=tokenizer, dtype=dtype)
    if stat.S_ISDIR(mode):
        path = folder_entry(path)
        if path.is_dir():
            from attnlab.checkpoints.hf_folder import load_hf_folder

            return load_hf_folder(path, device=device, tokenizer=tokenizer, dtype=dtype)
        mode = _stat_mode(path)
    elif path.name == "config.json" or (path.suffix == ".safetensors" and plain_safetensors_in_hf_folder(path)):
        from attnlab.checkpoints.hf_folder import load_hf_folder

        return load_hf_folder(path.parent, device=device, tokenizer=tokenizer, dtype=dtype)
    if is_snapshots_file(path):
        raise CheckpointError(
            f"Cannot load the checkpoint {str(path)!r}: it holds training snapshots of a model, not a model; "
            f"open {path.name.removesuffix('.snapshots.safetensors')}.safetensors beside it (its attention "
            "stages then have a training-step slider)"
        )
    if not stat.S_ISREG(mode):
        raise CheckpointError(
            f"Cannot load the checkpoint {str(path)!r}: it is not a regular file (a device, "
            "pipe or socket), so it cannot be a checkpoint"
        )
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {e.strerror or e}") from e
    if head == GGUF_MAGIC or path.suffix.lower() == ".gguf":  # llama.cpp's format: checkpoints/gguf_file.py
        from attnlab.checkpoints.gguf_file import load_gguf

        return load_gguf(path, device=device, tokenizer=tokenizer, dtype=dtype)
    if path.suffix.lower() in TORCH_SUFFIXES or head == ZIP_MAGIC:
        tok = user_tokenizer(tokenizer, path)
        return load_torch_file(path, device=device, settings=settings, tokenizer=tok, dtype=dtype)
    return with_snapshots_file(load_safetensors(path, device=device, dtype=dtype), path)


def with_snapshots_file(model: LiveModel, checkpoint: Path) -> LiveModel:
    """Note the training snapshots beside `checkpoint` (<stem>.snapshots.safetensors), when there are any, in
    the model's metadata ("snapshots_file"; read by checkpoints.snapshots.load_snapshots, never saved)."""
    beside = snapshots_path(checkpoint)
    if not is_snapshots_file(checkpoint) and beside.is_file() and _inside(checkpoint.parent, beside.name):
        model.metadata["snapshots_file"] = str(beside)
    return model


def _inside(folder: Path, name: str) -> bool:
    """Whether `name` in `folder` stays inside it (a snapshots file linked from elsewhere is not read)."""
    try:
        confined(folder, name, "the snapshots file")
    except FileRefused:
        return False
    return True


def _stat_mode(path: Path) -> int:
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: there is no file at that path") from None
    except OSError as e:
        raise CheckpointError(f"Cannot load the checkpoint {str(path)!r}: {e.strerror or e}") from e


def folder_entry(folder: Path) -> Path:
    """What opening a folder means: a Hugging Face folder (config.json) itself, else its nanoGPT ckpt.pt,
    else its one checkpoint file."""
    if has_file(folder, "config.json"):  # a FIFO or device by that name is refused, never opened
        return folder
    if has_file(folder, "ckpt.pt"):
        return folder / "ckpt.pt"
    files = sorted(
        p
        for p in folder.iterdir()
        if p.suffix.lower() in (*TORCH_SUFFIXES, ".safetensors", ".gguf") and not is_snapshots_file(p)
    )
    if len(files) == 1:
        return files[0]
    found = (
        f"it holds {len(files)} checkpoint files ({', '.join(p.name for p in files[:6])})"
        if files
        else "it holds no config.json, ckpt.pt, .safetensors, .gguf or .pt file"
    )
    raise CheckpointError(f"Cannot load the checkpoint folder {str(folder)!r}: {found}; open one file instead")


def plain_safetensors_in_hf_folder(path: Path) -> bool:
    """model.safetensors picked from a Hugging Face folder: open the folder (the file has no attnlab config)."""
    return has_file(path.parent, "config.json") and path.name.startswith("model")


def user_tokenizer(spec: str | Path | Tokenizer | None, checkpoint: Path) -> Tokenizer | None:
    """A tokenizer the user named (path), already built, or None."""
    if spec is None or not isinstance(spec, (str, Path)):
        return spec
    from attnlab.checkpoints.errors import Problems
    from attnlab.checkpoints.tokenizer_files import tokenizer_at

    problems = Problems(checkpoint)
    tok = tokenizer_at(spec, problems)
    problems.raise_if_any()
    return tok
