"""Where a model's weights go when they do not fit the memory of the device it runs on (issue 23, bigger than
memory): whole layers over the run's device, the host and the disk, through accelerate (engine/offload.py). Used by
build_live_model only when the weights alone would not fit, so every model that fits is placed as before.

    placement = plan_for(module, held_dtype, device)   # None: the weights do not fit even spread out
    module = place(module, tensors, placement)         # accelerate's hooks bring each layer in for its forward
"""

from __future__ import annotations

import shutil
import tempfile
import weakref

import torch

from attnlab.engine import memory
from attnlab.engine.model import Transformer
from attnlab.engine.offload import DISK, HOST, Placement, dispatch, plan_placement

WORKING_SHARE = 0.8  # at most this share of a tier's free memory holds weights: the rest is for the run itself


def tiers_for(device: torch.device) -> list[tuple[str, int | None]]:
    """The run's device first, then the host (for a GPU run), then the disk (unlimited)."""
    host = int(memory.host_available() * WORKING_SHARE)
    if device.type == "cuda":
        return [(str(device), int(memory.available_on(device) * WORKING_SHARE)), (HOST, host), (DISK, None)]
    return [(HOST, host), (DISK, None)]


def plan_for(module: Transformer, held: torch.dtype, device: torch.device) -> tuple[Placement | None, str]:
    """(a placement of whole layers, '') or (None, why not: one line with the numbers)."""
    element = torch.empty((), dtype=held).element_size()
    try:
        return plan_placement(module, tiers_for(device), element), ""
    except MemoryError as e:
        return None, str(e)


class OffloadError(OSError):
    """The disk layers could not be written (a full disk, a TMPDIR that cannot be written); the message names the
    folder and why, and nothing of the folder is left behind."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "the offload folder could not be written"


def place(module: Transformer, placement: Placement) -> Transformer:
    """`module` (its parameters already the checkpoint's tensors, fill_from) put where `placement` says, one tensor
    at a time; the disk layers are written to a temporary folder that lives as long as the module. A write that
    fails (OffloadError: the folder and why) removes the folder and every layer written to it so far."""
    try:
        folder = tempfile.mkdtemp(prefix="attnlab-offload-")
    except OSError as e:
        where = tempfile.gettempdir()
        raise OffloadError(f"could not make an offload folder in {where}: {e.strerror or e}{HINT}") from e
    values = {**dict(module.named_parameters(remove_duplicate=False)), **dict(module.named_buffers())}
    try:
        placed = dispatch(module, placement, lambda name: values[name].data, folder)
    except BaseException as e:
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(e, OSError):
            raise OffloadError(f"could not write the offload folder {folder}: {e.strerror or e}{HINT}") from e
        raise
    weakref.finalize(placed, shutil.rmtree, folder, True)
    return placed  # type: ignore[return-value]


HINT = " (TMPDIR names where it goes: a folder on a disk with room)"
