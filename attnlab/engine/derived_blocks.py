"""Large derived attention maps read in small pieces: one head, one block of query rows at a time.

A recording run stores Q, K, V, the mask and the context of every site; scores, scaled, masked and weights
are `Derived` rules (derived.py, layers.recorded_fused_attention). For a long input one site's maps are
[H, Tq, Tk] — 2 GiB of float32 for 8 heads at 8,192 tokens — so a map bigger than BLOCK_BYTES is never
computed for all heads and all rows at once: each block of rows of one head runs the same rules (the same
kernels, on the rows' numbers; softmax and the mask work row by row) and lands in the result. Reading one
head makes only that head's [Tq, Tk]; reading every head fills the whole result block by block.

The trace reads these through `Trace.device_value` and `Trace.read` (trace.py); nothing here is cached.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.engine.derived import MAP_RULES, Derived, compute
from attnlab.engine.derived import Readable as Trace  # what is read of a trace.Trace (trace.py imports this module)

# the rules of a site's maps, each from the one before: scores … softmax_rows and each score step's
# (engine/score_step.py: its mechanism module registers its rule with derived.register)
CHAIN = MAP_RULES
BLOCK_BYTES = 64 << 20  # a map larger than this is computed in blocks of rows of about this size


def chain_rule(trace: Trace, name: str) -> Derived | None:
    """The entry's rule when it is one of a site's derived maps (scores … weights), else None."""
    entry = trace.entries.get(name)
    return entry if isinstance(entry, Derived) and entry.rule in CHAIN else None


def map_shape(trace: Trace, name: str) -> tuple[int, int, int]:
    """(H, Tq, Tk) of a derived map, read off the stored entries it comes from (nothing is computed)."""
    entry = chain_rule(trace, name)
    assert entry is not None, f"{name!r} is not a derived attention map"
    while entry.rule != "scores":
        below = chain_rule(trace, entry.inputs[0])
        if below is None:  # a stored map (a recorder that kept scores): its own shape
            H, Tq, Tk = trace.device_value(entry.inputs[0]).shape
            return H, Tq, Tk
        entry = below
    q, k = (trace.device_value(n) for n in entry.inputs)  # [H, Tq, dk], [H_kv, Tk, dk]
    return q.shape[0], q.shape[1], k.shape[1]


def is_big_map(trace: Trace, name: str) -> bool:
    """Whether `name` is a derived map too large to compute for all heads and rows at once."""
    if chain_rule(trace, name) is None:
        return False
    H, Tq, Tk = map_shape(trace, name)
    return H * Tq * Tk * 4 > BLOCK_BYTES


def block(trace: Trace, name: str, heads: slice, rows: slice) -> Tensor:
    """value[heads, rows] of a site's entry [H, Tq, Tk] (a derived map or a stored one; the mask [Tq, Tk]
    gives its rows, the same for every head), computed from the stored Q, K and mask rows only."""
    entry = chain_rule(trace, name)
    if entry is None:
        value = trace.device_value(name)
        return value[rows] if value.dim() == 2 else value[heads, rows]  # [r, Tk] or [h, r, Tk]
    if entry.rule == "scores":
        q, k = (trace.device_value(n) for n in entry.inputs)  # [H, Tq, dk], [H_kv, Tk, dk]
        group = q.shape[0] // k.shape[0]
        kv_heads = torch.arange(heads.start, heads.stop, device=k.device) // group  # Q head -> its K head
        return compute(entry, [q[heads, rows], k.index_select(0, kv_heads)])  # [h, r, Tk]
    inputs = [block(trace, entry.inputs[0], heads, rows)]  # [h, r, Tk]
    inputs += [block(trace, n, heads, rows) for n in entry.inputs[1:]]  # the mask's rows [r, Tk]
    return compute(entry, inputs)  # [h, r, Tk]


def rows_per_block(Tk: int) -> int:
    """Query rows of one head that make about BLOCK_BYTES of float32 map."""
    return max(1, BLOCK_BYTES // (Tk * 4))


def head_value(trace: Trace, name: str, head: int) -> Tensor:
    """One head's map [Tq, Tk] of a derived map, block of rows by block of rows."""
    return heads_value(trace, name, range(head, head + 1))[0]


def heads_value(trace: Trace, name: str, heads: range | None = None) -> Tensor:
    """The maps [h, Tq, Tk] of `heads` (all by default) of a derived map, filled one head's block of rows at
    a time: the only map this large that is made is the result."""
    H, Tq, Tk = map_shape(trace, name)
    heads = range(H) if heads is None else heads
    step = rows_per_block(Tk)
    out: Tensor | None = None
    for i, h in enumerate(heads):
        for r in range(0, Tq, step):
            part = block(trace, name, slice(h, h + 1), slice(r, r + step))  # [1, rows, Tk]
            if out is None:
                out = torch.empty((len(heads), Tq, Tk), dtype=part.dtype, device=part.device)
            out[i : i + 1, r : r + step] = part
    assert out is not None
    return out  # [h, Tq, Tk]
