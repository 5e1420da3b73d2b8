"""GPTQ and AWQ weights in a Hugging Face folder (config.json quantization_config.quant_method "gptq" / "awq"),
unpacked from their int32 words and dequantized: w = scale × (code − zero), per group of input features.

GPTQ (auto-gptq / optimum / GPTQModel, `bits` 2, 4 or 8; a linear layer `M`), k = 32 / bits codes a word,
the first in the lowest bits:
    M.qweight  int32 [in / k, out]        code[i, o] = qweight[i // k, o] >> (bits · (i % k))  & (2^bits − 1)
    M.qzeros   int32 [groups, out / k]    zero[g, o] = qzeros[g, o // k] >> (bits · (o % k))   & (2^bits − 1)
                                          (+ 1 in checkpoint_format "gptq", which stores zero − 1; not in "gptq_v2")
    M.scales   float16 [groups, out]
    M.g_idx    int32 [in]: each input feature's group (i // group_size, or any order with act-order / desc_act)
    W[o, i] = scales[g_idx[i], o] × (code[i, o] − zero[g_idx[i], o])

AWQ (AutoAWQ "gemm", 4 bits): packed along the output, in the interleaved order 0 2 4 6 1 3 5 7 (so the word's
j-th nibble holds output AWQ_ORDER[j] of its 8):
    M.qweight  int32 [in, out / 8],  M.qzeros int32 [in / group_size, out / 8],  M.scales float16 [groups, out]
    W[o, i] = scales[i // group_size, o] × (code[i, o] − zero[i // group_size, o])
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab import limits
from attnlab.checkpoints.quantized_bnb import Packed
from attnlab.checkpoints.quantized_methods import settings

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # nibble j of an AWQ word holds output AWQ_ORDER[j] of its 8
SCALE_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def unpack(words: torch.Tensor, bits: int, dim: int) -> torch.Tensor:
    """int32 words -> their codes along `dim` (0: rows, 1: columns), the lowest bits first. [r, c] -> [r·k, c]
    or [r, c·k]."""
    k = 32 // bits
    shifts = torch.arange(0, 32, bits, dtype=torch.int32)  # [k]
    if dim == 0:
        codes = (words.unsqueeze(1) >> shifts.view(1, k, 1)) & ((1 << bits) - 1)  # [r, k, c]
        return codes.reshape(words.shape[0] * k, words.shape[1])
    codes = (words.unsqueeze(2) >> shifts.view(1, 1, k)) & ((1 << bits) - 1)  # [r, c, k]
    return codes.reshape(words.shape[0], words.shape[1] * k)


def _awq_order(codes: torch.Tensor) -> torch.Tensor:
    """Columns unpacked from AWQ words, put back in output order ([r, c] -> [r, c])."""
    reverse = [AWQ_ORDER.index(j) for j in range(8)]  # output j of a word sits in nibble reverse[j]
    columns = torch.arange(codes.shape[1]).view(-1, 8)[:, reverse].reshape(-1)
    return codes[:, columns]


def _tensor(state: dict[str, torch.Tensor], key: str, shape: tuple[int, ...], dtypes: tuple) -> torch.Tensor:
    t = state.get(key)
    if t is None:
        raise ValueError(f"{key} is missing")
    if tuple(t.shape) != shape or t.dtype not in dtypes:
        raise ValueError(
            f"{key} is {str(t.dtype).removeprefix('torch.')} {list(t.shape)}; its layout needs {list(shape)} "
            f"{'/'.join(str(d).removeprefix('torch.') for d in dtypes)}"
        )
    return t


def read_grouped(module: str, state: dict[str, torch.Tensor], method: str, qc: dict[str, Any]) -> Packed:
    """The GPTQ / AWQ linear layer `module` ("….q_proj."), checked and unpacked; ValueError says what is wrong."""
    bits, group, minus_one = settings(method, qc)
    k = 32 // bits
    qweight = state.get(module + "qweight")
    if qweight is None or qweight.dtype != torch.int32 or qweight.dim() != 2:
        raise ValueError(f"{module}qweight must be an int32 matrix")
    rows, cols = qweight.shape
    n_in, n_out = (rows * k, cols) if method == "gptq" else (rows, cols * k)
    if n_in * n_out > limits.MAX_PARAMETERS:
        raise ValueError(f"{module}qweight claims {n_in:,} × {n_out:,} weights")
    size = n_in if group == -1 else group
    n_groups = -(-n_in // size)
    scales = _tensor(state, module + "scales", (n_groups, n_out), SCALE_DTYPES)
    qzeros = _tensor(state, module + "qzeros", (n_groups, n_out // k), (torch.int32,))
    if method == "gptq":
        codes = unpack(qweight, bits, 0)  # [in, out]
        zeros = unpack(qzeros, bits, 1) + (1 if minus_one else 0)  # [groups, out]
        if module + "g_idx" in state:  # act-order: any order of the groups
            g_idx = _tensor(state, module + "g_idx", (n_in,), (torch.int32, torch.int64))
        else:
            g_idx = torch.arange(n_in, dtype=torch.int32) // size
        if g_idx.numel() and (int(g_idx.min()) < 0 or int(g_idx.max()) >= n_groups):
            raise ValueError(f"{module}g_idx names groups outside 0 … {n_groups - 1}")
    else:
        codes = _awq_order(unpack(qweight, bits, 1))  # [in, out]
        zeros = _awq_order(unpack(qzeros, bits, 1))  # [groups, out]
        g_idx = torch.arange(n_in, dtype=torch.int32) // size
    extra = (32 if method == "gptq" and module + "g_idx" in state else 0) * n_in  # g_idx, int32 per input
    stored = (bits * n_in * n_out + n_groups * n_out * (8 * scales.element_size() + bits) + extra) / (n_in * n_out)
    return Packed(
        module + "weight",
        f"{bits}-bit",
        (n_out, n_in),
        codes.t().contiguous(),  # [out, in]
        scales.float().t().contiguous(),  # [out, groups]
        None,
        size,
        False,
        stored,
        str(scales.dtype).removeprefix("torch."),
        zeros=zeros.t().contiguous(),  # [out, groups]
        groups=g_idx.to(torch.int64),
    )


def grouped_modules(state: dict[str, torch.Tensor]) -> list[str]:
    """The linear layers of `state` stored as GPTQ / AWQ words ("….q_proj.")."""
    return [key.removesuffix("qweight") for key in state if key.endswith(".qweight")]


def grouped_keys(module: str, state: dict[str, torch.Tensor]) -> list[str]:
    return [module + s for s in ("qweight", "qzeros", "scales", "g_idx") if module + s in state]


def read_all_grouped(state: dict[str, torch.Tensor], method: str, qc: dict[str, Any]) -> tuple[list[Packed], list[str]]:
    """(every GPTQ / AWQ layer of `state`, read and checked; one line per layer that is not)."""
    packed, problems = [], []
    for module in grouped_modules(state):
        try:
            packed.append(read_grouped(module, state, method, qc))
        except ValueError as e:
            problems.append(str(e))
    return packed, problems
