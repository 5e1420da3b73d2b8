"""The precision weights are held and run in (issue 23, "weights as stored").

A checkpoint's bf16, fp16 or fp32 weights stay in their stored dtype; a run asks for "stored" (that dtype) or
"float32" (RunOptions.precision). Switching converts the module in place: bf16/fp16 -> fp32 -> bf16/fp16 gives
back the same bits, so flipping the precision never changes the stored weights. On the CPU bf16 and fp16 run as
stored too (torch 2.13 computes every op attnlab uses in both there, fp16 slowly). Qt-free.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab.engine.options import PRECISIONS  # noqa: F401  (RunOptions.precision's values, re-exported)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}  # held dtypes by name
LOAD_DTYPES = ("stored", *DTYPES)  # what attnlab.load(path, dtype=...) accepts


def dtype_name(dtype: torch.dtype) -> str:
    """'float32', 'bfloat16', 'float16'."""
    return str(dtype).removeprefix("torch.")


def stored_dtype(tensors: dict[str, torch.Tensor]) -> torch.dtype:
    """The dtype most of the floating-point values are stored in (float32 when there are none)."""
    counts: dict[torch.dtype, int] = {}
    for t in tensors.values():
        if t.is_floating_point() and t.dtype in DTYPES.values():
            counts[t.dtype] = counts.get(t.dtype, 0) + t.numel()
    return max(counts, key=lambda d: counts[d]) if counts else torch.float32


def held_dtype(tensors: dict[str, torch.Tensor], requested: str | None) -> torch.dtype:
    """The dtype a loader holds the weights in: `requested` ("stored"/None: as the file has them, or a name of
    DTYPES). ValueError for any other name."""
    if requested in (None, "stored"):
        return stored_dtype(tensors)
    if requested not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(LOAD_DTYPES)} (got {requested!r})")
    return DTYPES[requested]


def run_dtype(held: torch.dtype, precision: str) -> torch.dtype:
    """The dtype a run with RunOptions.precision `precision` computes in, for weights held in `held`."""
    return torch.float32 if precision == "float32" else held


def module_dtype(module: nn.Module) -> torch.dtype:
    """The dtype the module's floating-point parameters are in now."""
    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def convert_module(module: nn.Module, dtype: torch.dtype) -> None:
    """Parameters and buffers to `dtype`, in place; a fixed sinusoid table is computed again (never rounded
    through a narrower dtype)."""
    module.to(dtype)
    table = getattr(module, "sinusoid_table", None)
    if table is not None and isinstance(getattr(module, "sinusoid", None), torch.Tensor):
        module.sinusoid = table().to(device=module.sinusoid.device, dtype=dtype)
