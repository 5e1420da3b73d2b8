"""The snapshots file: a model's weights at a few training steps, in float16, beside its checkpoint.

    <stem>.safetensors             the trained model (float32), what the app opens
    <stem>.snapshots.safetensors   tensors "step{N}.{name}" for each kept step N (0: as initialised),
                                   the same names as the checkpoint's tensors; metadata (str -> str):
                                   format, steps ("0,200,…"), final_step, losses (JSON), weights_sha256

`weights_sha256` is the digest of the final model's tensors (`tensor_digest`), so a snapshots file is
recognised as belonging to its checkpoint even after the checkpoint's metadata is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors.torch import save_file

from attnlab.checkpoints.errors import CheckpointError
from attnlab.fileio import WriteError, atomic_write

SNAPSHOTS_FORMAT = "attnlab-snapshots/1"
SNAPSHOTS_SUFFIX = ".snapshots.safetensors"


def snapshots_path(checkpoint: str | os.PathLike[str]) -> Path:
    """Where the snapshots of `checkpoint` (…/name.safetensors) live: …/name.snapshots.safetensors."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(checkpoint.name.removesuffix(".safetensors") + SNAPSHOTS_SUFFIX)


def is_snapshots_file(path: str | os.PathLike[str]) -> bool:
    return Path(path).name.endswith(SNAPSHOTS_SUFFIX)


def step_key(step: int, name: str) -> str:
    return f"step{step}.{name}"


def tensor_digest(tensors: dict[str, torch.Tensor]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of `tensors`, in name order."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def save_snapshots(
    path: str | os.PathLike[str],
    snapshots: dict[int, dict[str, torch.Tensor]],
    final_step: int,
    final_tensors: dict[str, torch.Tensor],
    losses: dict[int, float] | None = None,
) -> Path:
    """Write `snapshots` ({step: {tensor name: tensor}}) as float16, atomically. `final_tensors`: the trained
    model's own tensors (their digest ties the file to its checkpoint); `losses`: the training loss measured
    on each snapshot's weights, where known. A snapshot at `final_step` is left out: the checkpoint itself
    holds those weights, in float32."""
    path = Path(path)
    snapshots = {step: weights for step, weights in snapshots.items() if step < final_step}
    if not snapshots:
        raise CheckpointError(f"Cannot save snapshots to {str(path)!r}: there are none")
    tensors = {
        step_key(step, name): t.detach().to("cpu", torch.float16).contiguous()
        for step, weights in sorted(snapshots.items())
        for name, t in weights.items()
    }
    steps = sorted(snapshots)
    metadata = {
        "format": SNAPSHOTS_FORMAT,
        "steps": ",".join(map(str, steps)),
        "final_step": str(final_step),
        "losses": json.dumps({str(s): round(float(v), 5) for s, v in sorted((losses or {}).items()) if s in steps}),
        "weights_sha256": tensor_digest(final_tensors),
    }
    try:
        atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata))
    except WriteError as e:
        raise CheckpointError(f"Cannot save snapshots to {str(path)!r}: {str(e).split(': ', 1)[-1]}") from e
    return path
