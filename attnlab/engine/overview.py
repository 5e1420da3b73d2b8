"""Long attention maps read small: an overview of one head's map, an exact window of it, one cell.

At 8,192 tokens one head's map is 8,192² float32 = 256 MiB and a site's heads 2 GiB; a screen shows about a
thousand pixels across. `overview` reduces one head's [Tq, Tk] map to about rows × cols tiles, each the MAX of
its block of cells, computed where the trace lives one block of query rows at a time (each block of rows is
what derived_blocks.block computes: the same rules and kernels as a whole read), so neither the full map nor
every head's maps are ever held. `window` gives the exact values of a sub-rectangle, `cell` one value.

Why the maximum: what people look for in an attention map are the few strong weights (a head that attends to
the previous token, to the first token, to a matching word); a mean would wash a single 0.9 among 32 near-zero
cells out to 0.03, while the maximum keeps it visible at any zoom. Masked cells: a blocked score is −∞ and
never wins a maximum, so a tile reads −∞ (masked) only when every cell of it is blocked; NaN cells count as
masked (they are set to −∞ before the maximum). Weights of blocked keys are exactly 0, so a weights tile is 0
only where all its cells are 0; which tiles are wholly blocked is the overview of the mask (−∞ = all blocked).

Tiles: along an axis of n cells asked for k tiles, every tile holds s = ceil(n / k) cells (the last one
fewer), so there are ceil(n / s) ≤ k tiles; tile i covers cells [i·s, min((i+1)·s, n)). `tile_size` says it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnlab.engine import derived_blocks

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

BLOCK_BYTES = 32 << 20  # the rows of one head computed at once: about this much float32 map


def map_shape(trace: Trace, name: str) -> tuple[int, ...]:
    """The shape of a map entry ([H, Tq, Tk], or [Tq, Tk] for the mask) without computing or copying it."""
    if derived_blocks.chain_rule(trace, name) is not None:
        return derived_blocks.map_shape(trace, name)
    return tuple(trace.device_value(name).shape)


def tile_size(n: int, tiles: int) -> int:
    """Cells per tile along an axis of `n` cells cut into at most `tiles` tiles (see the module docstring)."""
    return max(1, math.ceil(n / max(1, tiles)))


def _rows(trace: Trace, name: str, head: int | None, r0: int, r1: int) -> Tensor:
    """Rows r0:r1 of one head's map (or of a [Tq, Tk] entry when head is None), where the trace lives: [r, Tk]."""
    if head is not None and derived_blocks.chain_rule(trace, name) is not None:
        return derived_blocks.block(trace, name, slice(head, head + 1), slice(r0, r1))[0]  # [r, Tk]
    value = trace.device_value(name)  # stored: [H, Tq, Tk] or [Tq, Tk], no copy
    return value[r0:r1] if head is None else value[head, r0:r1]


def _pool(rows: Tensor, s_r: int, s_c: int) -> Tensor:
    """[r, Tk] -> [ceil(r / s_r), ceil(Tk / s_c)]: the max of each s_r × s_c block, NaN as −∞."""
    r, tk = rows.shape
    n_r, n_c = math.ceil(r / s_r), math.ceil(tk / s_c)
    work = rows.float()
    if n_r * s_r != r or n_c * s_c != tk:  # pad the last tiles with −∞, which never wins
        work = torch.nn.functional.pad(work, (0, n_c * s_c - tk, 0, n_r * s_r - r), value=-math.inf)
    across = work.reshape(n_r * s_r, n_c, s_c).amax(dim=2)  # [r, n_c]: along each row first (contiguous)
    if across.isnan().any():  # a NaN cell (amax keeps NaN): that rows' tiles again, NaN as −∞
        across = work.nan_to_num(nan=-math.inf, posinf=math.inf, neginf=-math.inf).reshape(n_r * s_r, n_c, s_c)
        across = across.amax(dim=2)
    return across.reshape(n_r, s_r, n_c).amax(dim=1)  # [n_r, n_c]


def overview(trace: Trace, name: str, head: int | None, rows: int, cols: int) -> Tensor:
    """About rows × cols tiles of head `head`'s map of entry `name` (None: a [Tq, Tk] entry such as the mask),
    each the max of its block (module docstring): a float32 host tensor [ceil(Tq / s_r), ceil(Tk / s_c)]."""
    shape = map_shape(trace, name)
    return pooled(trace, name, head, tile_size(shape[-2], rows), tile_size(shape[-1], cols))


def pooled(trace: Trace, name: str, head: int | None, s_r: int, s_c: int) -> Tensor:
    """The map cut into tiles of s_r × s_c cells, each the max of its cells: [ceil(Tq / s_r), ceil(Tk / s_c)]."""
    shape = map_shape(trace, name)
    tq, tk = shape[-2], shape[-1]
    step = max(1, BLOCK_BYTES // (4 * tk * s_r)) * s_r  # whole tiles of rows per block
    parts = [_pool(_rows(trace, name, head, r, min(r + step, tq)), s_r, s_c) for r in range(0, tq, step)]
    return torch.cat(parts).cpu()  # [n_r, n_c]


def window(trace: Trace, name: str, head: int | None, row_range: tuple[int, int], col_range: tuple[int, int]) -> Tensor:
    """The exact values of rows row_range[0]:row_range[1], columns col_range[0]:col_range[1] of one head's map,
    a float32 host tensor [r, c] (the rows are computed whole, one block at a time, then cut)."""
    shape = map_shape(trace, name)
    tq, tk = shape[-2], shape[-1]
    r0, r1 = max(0, row_range[0]), min(tq, row_range[1])
    c0, c1 = max(0, col_range[0]), min(tk, col_range[1])
    step = max(1, BLOCK_BYTES // (4 * tk))
    parts = [_rows(trace, name, head, r, min(r + step, r1))[:, c0:c1] for r in range(r0, r1, step)]
    if not parts:
        return torch.empty((0, max(0, c1 - c0)), dtype=torch.float32)
    return torch.cat(parts).float().cpu()  # [r, c]


def cell(trace: Trace, name: str, head: int | None, q: int, k: int) -> float:
    """The exact value at (q, k) of one head's map (its row is computed alone)."""
    return float(window(trace, name, head, (q, q + 1), (k, k + 1))[0, 0])
