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
# weights stored in 8 bits (FP8 checkpoints without a quantization_config): attnlab computes in none of them, so
# "stored" holds them in bfloat16, which holds every float8 value exactly (8 exponent bits, 7 mantissa bits)
FLOAT8 = frozenset(
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
    if hasattr(torch, name)
)
FLOAT8_HELD = torch.bfloat16


def dtype_name(dtype: torch.dtype) -> str:
    """'float32', 'bfloat16', 'float16'."""
    return str(dtype).removeprefix("torch.")


def stored_dtype(tensors: dict[str, torch.Tensor]) -> torch.dtype:
    """The dtype most of the floating-point values are stored in (float32 when there are none)."""
    counts: dict[torch.dtype, int] = {}
    for t in tensors.values():
        dtype = FLOAT8_HELD if t.dtype in FLOAT8 else t.dtype
        if t.is_floating_point() and dtype in DTYPES.values():
            counts[dtype] = counts.get(dtype, 0) + t.numel()
    return max(counts, key=lambda d: counts[d]) if counts else torch.float32


def arithmetic_ready(t: torch.Tensor) -> torch.Tensor:
    """`t` in float32 when it is stored in float8 (torch has no arithmetic in 8 bits), else `t` itself."""
    return t.float() if t.dtype in FLOAT8 else t


def float8_notice(tensors: dict[str, torch.Tensor], held: torch.dtype) -> str:
    """The notice a loader gives when weights stored in float8 are held wider ('' when none are)."""
    stored = sorted({dtype_name(t.dtype) for t in tensors.values() if t.dtype in FLOAT8})
    if not stored:
        return ""
    exact = held != torch.float16 or "float8_e8m0fnu" not in stored  # e8m0's range is wider than float16's
    how = "exactly (every float8 value is one of them)" if exact else "rounded where out of its range"
    return (
        f"The weights stored in {' and '.join(stored)} are held in {dtype_name(held)}, {how}: attnlab computes "
        "in 16 or 32 bits, as transformers does for them."
    )


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
