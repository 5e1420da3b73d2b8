"""bitsandbytes weights in a Hugging Face folder, dequantized by the format's own formulas (no bitsandbytes needed).

How transformers saves them (bitsandbytes' `Linear4bit._save_to_state_dict` / `QuantState.as_dict(packed=True)`,
`Linear8bitLt._save_to_state_dict`), for a linear layer whose weight is `P` ("….q_proj.weight"):

4-bit (nf4 / fp4), `n` = rows × columns weights, in row-major order, in blocks of `blocksize`:
    P                                  uint8 [(n + 1) // 2, 1]: two 4-bit codes a byte, the first in the HIGH nibble
                                       (another storage dtype, bnb_4bit_quant_storage, is read as its bytes)
    P.absmax                           float32 [blocks]: each block's largest |w|; with double quantization uint8
                                       codes of it instead
    P.quant_map                        float32 [16]: the value of each 4-bit code (NF4's normal quantiles, or FP4)
    P.nested_absmax, P.nested_quant_map  (double quantization) float32 [ceil(blocks / nested_blocksize)], [256]
    P.quant_state.bitsandbytes__nf4    uint8: the JSON {quant_type, blocksize, dtype, shape[, nested_blocksize,
                                       nested_dtype, nested_offset]}
    w[i] = quant_map[code[i]] × absmax[i // blocksize]
    absmax[b] = nested_quant_map[absmax_code[b]] × nested_absmax[b // nested_blocksize] + nested_offset (double q.)

8-bit (LLM.int8), for the module `M` ("….q_proj."):
    M.weight int8 [rows, columns], M.SCB float32 [rows] (each row's largest |w|), M.weight_format uint8 0 ("row")
    w[r, c] = weight[r, c] × SCB[r] / 127   (as bitsandbytes computes it: × SCB, then × 7.874015718698502e-3)

Every size is checked against the others before a value is computed (a lying header is one line, not a crash).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnlab import limits

STATE_SUFFIX = ".quant_state.bitsandbytes__"  # + "nf4" / "fp4"
FOUR_BIT_TYPES = ("nf4", "fp4")
BLOCK_SIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)  # what bitsandbytes dequantizes
NESTED_BLOCK_SIZES = (*BLOCK_SIZES, 8192, 16384)
MAX_STATE_BYTES = 4096  # the packed JSON of a quant state is ~170 bytes
INT8_SCALE = 7.874015718698502e-3  # 1 / 127, as bitsandbytes writes it
FLOAT_NAMES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class Packed:
    """One quantized weight as the folder stores it: `scheme` "nf4" / "fp4" / "int8"; `codes` the 4-bit codes
    unpacked ([n] uint8) or the int8 matrix; `scales` each block's (row's) scale as float32, double quantization
    already undone; `levels` the value of each code (16 for 4-bit; None for int8); `shape` the weight's;
    `blocksize` weights per scale (a row's length for int8); `nested` double quantization; `bits` the bits the
    folder spends on it (codes + scales) per weight; `stored` the dtype it was quantized from.
    GPTQ and AWQ (quantized_gptq.py): `scheme` "4-bit" (their bits), `codes` [out, in] integers, `scales` and `zeros`
    [out, groups], `groups` [in] each input feature's group (GPTQ's g_idx; act-order is any order)."""

    name: str
    scheme: str
    shape: tuple[int, ...]
    codes: torch.Tensor
    scales: torch.Tensor
    levels: torch.Tensor | None
    blocksize: int
    nested: bool
    bits: float
    stored: str
    zeros: torch.Tensor | None = None
    groups: torch.Tensor | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def four_bit_names(state: dict[str, torch.Tensor]) -> dict[str, str]:
    """weight name -> its quant-state key, for every 4-bit weight in `state`."""
    out = {}
    for key in state:
        if STATE_SUFFIX in key:
            out[key.split(".quant_state.", 1)[0]] = key
    return out


def eight_bit_names(state: dict[str, torch.Tensor]) -> list[str]:
    """The weight names that have an LLM.int8 row scale (`….SCB`) beside them."""
    return [key.removesuffix("SCB") + "weight" for key in state if key.endswith(".SCB")]


def quantized_keys(weight: str, state: dict[str, torch.Tensor]) -> list[str]:
    """Every key of `state` that stores the quantized weight `weight` (the weight itself included)."""
    module = weight.removesuffix("weight")
    own = [k for k in state if k.startswith(weight + ".")]
    return [weight, *own, *(k for k in (module + "SCB", module + "weight_format") if k in state)]


# ---- reading the packed layout ------------------------------------------------------------------------------
def _state_json(name: str, key: str, packed: torch.Tensor) -> dict:
    if packed.dtype != torch.uint8 or packed.dim() != 1 or packed.numel() > MAX_STATE_BYTES:
        raise ValueError(f"{key} must be the bytes of a short JSON object (uint8 [≤ {MAX_STATE_BYTES}])")
    try:
        value = json.loads(bytes(packed.tolist()).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{key} is not JSON ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{key} must hold a JSON object")
    return value


def _choice(state: dict, field: str, allowed: tuple, what: str) -> object:
    value = state.get(field)
    if value not in allowed:
        raise ValueError(f"{what}: {field} {limits.excerpt(value)} is not one of {', '.join(map(str, allowed))}")
    return value


def _shape(state: dict, what: str) -> tuple[int, ...]:
    shape = state.get("shape")
    sizes: list[int] = list(shape) if isinstance(shape, list) and 1 <= len(shape) <= 4 else []
    good = bool(sizes) and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)
    if not good or math.prod(sizes) > limits.MAX_PARAMETERS:
        raise ValueError(f"{what}: shape {limits.excerpt(shape)} is not a list of 1 to 4 positive sizes")
    return tuple(sizes)


def _tensor(state: dict[str, torch.Tensor], key: str, numel: int, dtypes: tuple[torch.dtype, ...]) -> torch.Tensor:
    t = state.get(key)
    if t is None:
        raise ValueError(f"{key} is missing")
    if t.dtype not in dtypes or t.numel() != numel:
        raise ValueError(
            f"{key} holds {t.numel():,} {str(t.dtype).removeprefix('torch.')} values; the quant state needs "
            f"{numel:,} {'/'.join(str(d).removeprefix('torch.') for d in dtypes)}"
        )
    return t.reshape(-1)


def blockwise(codes: torch.Tensor, levels: torch.Tensor, scales: torch.Tensor, blocksize: int) -> torch.Tensor:
    """levels[codes[i]] × scales[i // blocksize], in float32 (bitsandbytes' dequantize_blockwise and
    dequantize_4bit: one product per value, so the same float32 bits). `codes` [n] -> [n]."""
    values = levels.float()[codes.long()]  # [n]
    n = values.numel()
    full = n - n % blocksize
    out = torch.empty(n, dtype=torch.float32)
    out[:full] = (values[:full].view(-1, blocksize) * scales[: full // blocksize].view(-1, 1)).reshape(full)
    if full < n:  # the last, short block
        out[full:] = values[full:] * scales[full // blocksize]
    return out


def unpack_nibbles(packed: torch.Tensor, n: int) -> torch.Tensor:
    """[bytes] uint8 -> [n] 4-bit codes, the high nibble first (as bitsandbytes packs them)."""
    codes = torch.empty(packed.numel() * 2, dtype=torch.uint8)  # [2 · bytes]
    codes[0::2] = packed >> 4
    codes[1::2] = packed & 0xF
    return codes[:n]


def read_four_bit(name: str, key: str, state: dict[str, torch.Tensor]) -> Packed:
    """The 4-bit weight `name` (its quant state at `key`), checked, unpacked; ValueError says what is wrong."""
    qs = _state_json(name, key, state[key])
    scheme = str(_choice(qs, "quant_type", FOUR_BIT_TYPES, key))
    blocksize = int(_choice(qs, "blocksize", BLOCK_SIZES, key))  # type: ignore[call-overload]
    stored = str(_choice(qs, "dtype", tuple(FLOAT_NAMES), key))
    shape = _shape(qs, key)
    n = math.prod(shape)
    blocks = -(-n // blocksize)
    weight = state.get(name)
    if weight is None:
        raise ValueError(f"{name} is missing")
    raw = weight.contiguous().view(torch.uint8).reshape(-1) if weight.dtype != torch.uint8 else weight.reshape(-1)
    if raw.numel() < (n + 1) // 2 or raw.numel() > (n + 1) // 2 + 16:
        raise ValueError(f"{name} holds {raw.numel():,} bytes; {n:,} 4-bit codes need {(n + 1) // 2:,}")
    levels = _tensor(state, name + ".quant_map", 16, (torch.float32,))
    nested = name + ".nested_absmax" in state
    if nested:
        scales = nested_scales(name, qs, state, blocks)
    else:
        scales = _tensor(state, name + ".absmax", blocks, (torch.float32,))
    bits = (8 * raw.numel() + scale_bits(name, state)) / n
    return Packed(name, scheme, shape, unpack_nibbles(raw, n), scales, levels, blocksize, nested, bits, stored)


def nested_scales(name: str, qs: dict, state: dict[str, torch.Tensor], blocks: int) -> torch.Tensor:
    """Double quantization undone: each block's absmax from its 8-bit code (float32 [blocks])."""
    key = name + ".quant_state"
    nested_size = int(_choice(qs, "nested_blocksize", NESTED_BLOCK_SIZES, key))  # type: ignore[call-overload]
    _choice(qs, "nested_dtype", ("float32",), key)
    offset = qs.get("nested_offset")
    if isinstance(offset, bool) or not isinstance(offset, (int, float)) or not math.isfinite(offset):
        raise ValueError(f"{key}: nested_offset {limits.excerpt(offset)} is not a number")
    codes = _tensor(state, name + ".absmax", blocks, (torch.uint8,))
    code_map = _tensor(state, name + ".nested_quant_map", 256, (torch.float32,))
    nested_absmax = _tensor(state, name + ".nested_absmax", -(-blocks // nested_size), (torch.float32,))
    scales = blockwise(codes, code_map, nested_absmax, nested_size)  # [blocks]
    scales += torch.tensor(float(offset), dtype=torch.float32)  # as bitsandbytes: absmax += offset (float32)
    return scales


def scale_bits(name: str, state: dict[str, torch.Tensor]) -> int:
    """Bits the folder spends on a 4-bit weight's scales (absmax, and the nested absmax when double-quantized)."""
    return sum(
        8 * state[k].numel() * state[k].element_size()
        for k in (name + ".absmax", name + ".nested_absmax")
        if k in state
    )


def read_eight_bit(name: str, state: dict[str, torch.Tensor]) -> Packed:
    """The LLM.int8 weight `name`, checked; ValueError says what is wrong."""
    module = name.removesuffix("weight")
    weight = state.get(name)
    if weight is None or weight.dtype != torch.int8 or weight.dim() != 2:
        found = "missing" if weight is None else f"{str(weight.dtype).removeprefix('torch.')} {list(weight.shape)}"
        raise ValueError(f"{name} must be an int8 matrix beside {module}SCB ({found})")
    fmt = state.get(module + "weight_format")
    if fmt is not None and (fmt.numel() != 1 or int(fmt.reshape(-1)[0]) != 0):
        raise ValueError(f"{module}weight_format is not 0 ('row'); only row-major int8 weights are stored today")
    rows, cols = weight.shape
    scb = _tensor(state, module + "SCB", rows, (torch.float32, torch.float16, torch.bfloat16)).float()
    bits = 8 + 8 * state[module + "SCB"].element_size() / cols
    return Packed(name, "int8", (rows, cols), weight, scb, None, cols, False, bits, "float16")


def dequantized(p: Packed) -> torch.Tensor:
    """The weight's values in float32, shaped as the weight, by the format's own formula."""
    if p.scheme == "int8":
        return p.codes * p.scales.view(-1, 1) * INT8_SCALE  # [rows, cols], bitsandbytes' int8_vectorwise_dequant
    if p.zeros is not None and p.groups is not None:  # GPTQ / AWQ: scale × (code − zero) of the input's group
        g = p.groups.long()  # [in]
        return p.scales[:, g] * (p.codes - p.zeros[:, g]).float()  # [out, in]
    assert p.levels is not None
    return blockwise(p.codes, p.levels, p.scales, p.blocksize).reshape(p.shape)


def read_all(state: dict[str, torch.Tensor]) -> tuple[list[Packed], list[str]]:
    """(every quantized weight of `state`, read and checked; one line per weight that is not)."""
    packed, problems = [], []
    jobs: list[tuple[Callable[..., Packed], tuple]] = [
        (read_four_bit, (name, key, state)) for name, key in four_bit_names(state).items()
    ]
    jobs += [(read_eight_bit, (name, state)) for name in eight_bit_names(state)]
    for read, args in jobs:
        try:
            packed.append(read(*args))
        except ValueError as e:
            problems.append(str(e))
    return packed, problems
