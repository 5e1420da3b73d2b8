"""Attention whose row t has the same bits however many keys follow it: what makes a generation step's row
(engine/kv_cache.py: one query over the t + 1 cached keys) equal, bit for bit, row t of a whole-sequence
recorded run (the same query over all T keys, those after t blocked).

A CPU matrix product picks its kernel, and so the order it sums in, by the matrices' sizes: Q Kᵀ over t + 1
keys and over T keys round some scores differently, and so do a softmax's sum and weights @ V over those
lengths. So every recorded attention works on keys padded to a multiple of KEY_GROUP (zeros, blocked): the
scores' products then take the same kernel whatever the multiple, a blocked key adds an exact 0 to the
softmax's sum, and weights @ V is summed KEY_GROUP keys at a time, in order, so the groups after row t's keys
add exact zeros; a product of fewer than 12 query rows is taken on a multiple of 4 (the last row repeated), as
a generation step's 4 rows are (a lone row, read by itself, has its row's bits too). Measured on this
machine's CPU for 37 to 600 keys; tests/engine/test_kv_cache.py checks the rows with torch.equal for GPT-2,
Llama, Gemma 2 and Marian. A run that records nothing takes the fused kernel (to float32 rounding of these),
unless it asks for a recording's bits (Recorder(stable=True): a patching map's runs); so does a recording
run past STABLE_KEYS keys or on a GPU, where this arithmetic would cost several times the fused kernel.

Plain torch; a leaf of the engine (layers.py and derived.py use it). Shapes: [..., Tq, Tk] maps, [..., Tk, dk]
keys and values.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

KEY_GROUP = 64  # keys are padded to a multiple of this; weights @ V sums this many at a time
# a recording run takes this arithmetic on the CPU up to this many keys, where it costs about what the fused
# kernel does (GPT-2-small shape, 512 tokens: 0.98x transformers' eager forward either way); past it, and on a
# GPU, the fused kernel (benchmarks/long_context_bench.py --tokens 4096: 4.9 s fused against 39-49 s)
STABLE_KEYS = 1024


def worth_it(q: Tensor, k: Tensor) -> bool:
    """Whether a recording run's attention of q [..., Tq, dk] over k [..., Tk, dk] takes the row-stable
    arithmetic (a generation step's rows equal the whole run's bit for bit) rather than the fused kernel."""
    return q.device.type == "cpu" and k.shape[-2] <= STABLE_KEYS


BLOCK_BYTES = 64 << 20  # a recording run's attention takes blocks of rows of about this many bytes of maps


def padded_length(n: int) -> int:
    """n keys rounded up to a multiple of KEY_GROUP."""
    return -(-n // KEY_GROUP) * KEY_GROUP


def _padded(x: Tensor, dim: int, extra: int, value: float = 0.0) -> Tensor:
    """x with `extra` entries of `value` after the last along `dim` (-1 or -2); x itself when none."""
    if extra == 0:
        return x
    return F.pad(x, (0, extra) if dim == -1 else (0, 0, 0, extra), value=value)


def _rows_of_four(x: Tensor) -> tuple[Tensor, int]:
    """x [..., M, c] with its last row repeated up to a multiple of 4 rows when M < 12 (a CPU matrix product of
    fewer rows rounds a short last group of rows apart: kv_cache.ROWS), and M."""
    m = x.shape[-2]
    extra = -m % 4 if 0 < m < 12 else 0
    return (torch.cat([x, x[..., -1:, :].expand(*x.shape[:-2], extra, x.shape[-1])], dim=-2) if extra else x), m


def scores(q: Tensor, k: Tensor) -> Tensor:
    """q [..., Tq, dk] @ k [..., Tk, dk]ᵀ -> [..., Tq, Tk], the product taken over the padded keys."""
    n = k.shape[-2]
    padded = _padded(k, -2, padded_length(n) - n)  # [..., Tk', dk], zeros after the keys
    rows, m = _rows_of_four(q)
    return (rows @ padded.transpose(-2, -1))[..., :m, :n]


def softmax(x: Tensor) -> Tensor:
    """softmax over the last axis [..., Tk] with the padded keys blocked (-inf: exp gives an exact 0)."""
    n = x.shape[-1]
    padded = _padded(x, -1, padded_length(n) - n, float("-inf"))  # [..., Tk']
    return torch.softmax(padded, dim=-1)[..., :n]


def weighted_sum(weights: Tensor, v: Tensor) -> Tensor:
    """weights [..., Tq, Tk] @ v [..., Tk, dk] -> [..., Tq, dk], summed KEY_GROUP keys at a time, in order."""
    n = v.shape[-2]
    if n == 0:
        return weights @ v  # no keys: the empty product
    pad = padded_length(n) - n
    w, m = _rows_of_four(_padded(weights, -1, pad))  # [..., Tq (4 at least), Tk']
    groups = w.shape[-1] // KEY_GROUP
    # [..., G, Tq, KEY_GROUP] @ [..., G, KEY_GROUP, dk]: one product per group of keys, on contiguous blocks
    w = w.unflatten(-1, (groups, KEY_GROUP)).transpose(-3, -2).contiguous()
    values = _padded(v, -2, pad).unflatten(-2, (groups, KEY_GROUP))
    parts = w @ values  # [..., G, Tq, dk]
    out = parts[..., 0, :, :]
    for g in range(1, groups):  # in order: a group after a row's last key adds an exact 0
        out = out + parts[..., g, :, :]
    return out[..., :m, :]


def row_blocks(maps: int, n_rows: int, n_keys: int) -> list[slice]:
    """The blocks of query rows a recording run's attention takes at a time: `maps` maps [n_rows, n_keys]
    (batch × heads) of about BLOCK_BYTES at most, each block a multiple of 4 rows and at least 12 (a CPU
    matrix product rounds a row alike in any such block: kv_cache.ROWS), a short last one joined to the one
    before."""
    per_row = maps * padded_length(n_keys) * 4  # float32 bytes of one row of every map
    size = max(12, (BLOCK_BYTES // max(per_row, 1)) // 4 * 4)
    starts = list(range(0, n_rows, size)) or [0]
    if len(starts) > 1 and n_rows - starts[-1] < 12:
        starts.pop()
    return [slice(a, b) for a, b in zip(starts, [*starts[1:], n_rows], strict=True)]


def by_blocks(
    attend: Callable[[Tensor, Tensor, Tensor, Tensor, Tensor | None], Tensor],
    q: Tensor,
    k: Tensor,
    v: Tensor,
    additive: Tensor,
    bias: Tensor | None,
) -> Tensor:
    """The context [B, H, Tq, dk] of `attend(q, k, v, mask, bias)` (layers.attention_steps) taken one head and
    one block of rows (row_blocks) at a time: no map of all heads at once. q [B, H, Tq, dk], k and v
    [B, H, Tk, dk] (a shared head repeated), additive mask [B|1, 1, Tq, Tk], bias [1, H, Tq, Tk] or None."""
    extra = padded_length(k.shape[-2]) - k.shape[-2]  # the keys padded once for every head and block
    k, v = _padded(k, -2, extra), _padded(v, -2, extra)  # [B, H, Tk', dk], zeros
    additive = _padded(additive, -1, extra, float("-inf"))  # [B|1, 1, Tq, Tk']: the padding blocked
    bias = None if bias is None else _padded(bias, -1, extra)
    heads = []
    for h in range(q.shape[1]):
        one = slice(h, h + 1)
        rows = [
            attend(q[:, one, r], k[:, one], v[:, one], additive[..., r, :], None if bias is None else bias[:, one, r])
            for r in row_blocks(q.shape[0], q.shape[-2], k.shape[-2])
        ]  # each [B, 1, rows, dk]
        heads.append(torch.cat(rows, dim=-2))
    return torch.cat(heads, dim=1)
