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


def place(module: Transformer, placement: Placement) -> Transformer:
    """`module` (its parameters already the checkpoint's tensors, fill_from) put where `placement` says, one tensor
    at a time; the disk layers are written to a temporary folder that lives as long as the module."""
    folder = tempfile.mkdtemp(prefix="attnlab-offload-")
    values = {**dict(module.named_parameters(remove_duplicate=False)), **dict(module.named_buffers())}
    placed = dispatch(module, placement, lambda name: values[name].data, folder)
    weakref.finalize(placed, shutil.rmtree, folder, True)
    return placed  # type: ignore[return-value]
