"""A long attention map as the panels read it: an overview sized to their pixels, exact windows, exact cells.

A map with more than LONG_SIDE rows or columns (8,192² float32 is 256 MiB per head) is never handed to a
widget whole. Its view-model carries a `MapSource` instead: `overview(rows, cols)` gives about rows × cols
tiles, each the max of its block of cells (engine/overview.py says why the max and how masked cells read),
`window(r0, r1, c0, c1)` the exact values of a rectangle, `value(q, k)` one cell. Every piece comes with the
cells the mask blocks (a tile counts as blocked when all of its cells are), so the widgets hatch them as they
hatch a small map's.

The finest overview computed for a map is kept (a few MiB), and a coarser one whose tiles are whole multiples
of its tiles is pooled from it with no new pass over the map: a panel resized, the heads grid and the model
view after the weights stage, cost one pass over each head at most.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from attnlab.engine import names, overview
from attnlab.engine.trace import Trace

LONG_SIDE = 1024  # a map with more rows or columns than this is drawn with level of detail
BASE_TILES = 1024  # the finest overview computed first: at most this many tiles along each side
MAP_STEPS = frozenset({"scores", "scaled", "biased", "capped", "masked", "weights", "mask"})  # [H, Tq, Tk] steps
CACHE_BYTES = 96 << 20  # the overviews kept, all traces together (the least recently read go first)

# re-entrant: a finalizer (_forget) may run under it; the views read tiles on a background thread too
_lock = threading.RLock()
_cache: OrderedDict[tuple[int, str, int | None, int, int], np.ndarray] = OrderedDict()


def is_long(shape: tuple[int, ...]) -> bool:
    """Whether a map of `shape` (…, Tq, Tk) is drawn with level of detail."""
    return len(shape) >= 2 and max(shape[-2], shape[-1]) > LONG_SIDE


def map_shape(trace: Trace, name: str) -> tuple[int, ...]:
    """The shape of a map entry, without computing or copying it."""
    return overview.map_shape(trace, name)


def long_shape(trace: Trace, name: str) -> tuple[int, ...] | None:
    """The shape of `name` when it is a long attention map or mask (never read whole), else None."""
    if name not in trace or names.step_of(name) not in MAP_STEPS:
        return None
    shape = map_shape(trace, name)
    return shape if is_long(shape) else None


@dataclass(frozen=True)
class MapPiece:
    """Part of a map as drawn: `values` [n_r, n_c] float32 (tiles or cells), `masked` bool [n_r, n_c] or None,
    covering rows from `row0` in steps of `row_step` cells (1: exact cells), columns likewise."""

    values: np.ndarray
    masked: np.ndarray | None
    row0: int
    col0: int
    row_step: int = 1
    col_step: int = 1


def _forget(key: int) -> None:
    with _lock:
        for k in [k for k in _cache if k[0] == key]:
            del _cache[k]


def _pool(values: np.ndarray, f_r: int, f_c: int) -> np.ndarray:
    """Max over f_r × f_c groups of tiles (the last group may be short): tiles of tiles."""
    rows = np.maximum.reduceat(values, np.arange(0, values.shape[0], f_r), axis=0)
    return np.maximum.reduceat(rows, np.arange(0, values.shape[1], f_c), axis=1)


@dataclass(frozen=True, eq=False)
class MapSource:
    """One head's [Tq, Tk] map of one trace entry, read in pieces. `head` None: a [Tq, Tk] entry (the mask).
    `allowed`: the mask panel's picture, 1.0 in every cell the mask lets through (blocked cells hatched)."""

    trace: Trace = field(repr=False)
    name: str
    head: int | None
    shape: tuple[int, int]
    mask: str | None = None  # the site's additive mask entry, when the run has one
    allowed: bool = False

    @property
    def weights(self) -> bool:
        """Whether this is a head's attention weights (drawn on weight_scale's colour scale)."""
        site = names.site_of(self.name)
        return not self.allowed and site is not None and self.name == names.site_entry(site, "weights")

    def tile_steps(self, rows: int, cols: int) -> tuple[int, int]:
        """Cells per tile of an overview of about rows × cols tiles: whole multiples of the base overview's."""
        tq, tk = self.shape
        base_r, base_c = overview.tile_size(tq, BASE_TILES), overview.tile_size(tk, BASE_TILES)
        s_r, s_c = overview.tile_size(tq, rows), overview.tile_size(tk, cols)
        return -(-s_r // base_r) * base_r, -(-s_c // base_c) * base_c

    def overview(self, rows: int, cols: int, *, keep: bool = True) -> MapPiece:
        """About rows × cols tiles (at most), each the max of its cells; a tile is masked when all are blocked.
        Pooled from the kept finest overview; without one, `keep` computes and keeps it, else (a thumbnail) the
        tiles asked for are computed alone and not kept."""
        s_r, s_c = self.tile_steps(rows, cols)
        tq, tk = self.shape
        masked = None
        if self.mask is not None:
            masked = np.isneginf(self._tiles(self.mask, None, s_r, s_c, keep))
        if self.allowed:
            values = np.ones((-(-tq // s_r), -(-tk // s_c)), np.float32)
        else:
            values = self._tiles(self.name, self.head, s_r, s_c, keep)
        return MapPiece(values, masked if masked is not None and masked.any() else None, 0, 0, s_r, s_c)

    def ready(self) -> bool:
        """Whether this map's finest overview is kept: any overview of it is then a cheap pooling."""
        with _lock:
            return (id(self.trace), self.name, self.head, *self.shape) in _cache

    def placeholder(self, rows: int, cols: int) -> MapPiece:
        """The overview `overview(rows, cols)` will give, with NaN tiles (not read yet) but its blocked tiles."""
        piece = MapSource(self.trace, self.name, self.head, self.shape, self.mask, allowed=True).overview(rows, cols)
        return MapPiece(np.full_like(piece.values, np.nan), piece.masked, 0, 0, piece.row_step, piece.col_step)

    def _tiles(self, name: str, head: int | None, s_r: int, s_c: int, keep: bool) -> np.ndarray:
        """The s_r × s_c tiles of one map: pooled from its finest overview, or computed alone."""
        base_r, base_c = self.tile_steps(BASE_TILES, BASE_TILES)
        with _lock:
            kept = (id(self.trace), name, head, *self.shape) in _cache
        if keep or kept:
            return _pool(self._base(name, head), s_r // base_r, s_c // base_c)
        return overview.pooled(self.trace, name, head, s_r, s_c).numpy()

    def window(self, r0: int, r1: int, c0: int, c1: int) -> MapPiece:
        """The exact cells of rows r0:r1, columns c0:c1 (clipped to the map)."""
        tq, tk = self.shape
        r0, r1, c0, c1 = max(0, r0), min(tq, r1), max(0, c0), min(tk, c1)
        masked = None
        if self.mask is not None:
            masked = np.isneginf(overview.window(self.trace, self.mask, None, (r0, r1), (c0, c1)).numpy())
        if self.allowed:
            values = np.ones((r1 - r0, c1 - c0), np.float32)
        else:
            values = overview.window(self.trace, self.name, self.head, (r0, r1), (c0, c1)).numpy()
        return MapPiece(values, masked if masked is not None and masked.any() else None, r0, c0)

    def value(self, q: int, k: int) -> tuple[float, bool]:
        """(the exact value at (q, k), whether the mask blocks that cell)."""
        piece = self.window(q, q + 1, k, k + 1)
        return float(piece.values[0, 0]), piece.masked is not None and bool(piece.masked[0, 0])

    def _base(self, name: str, head: int | None) -> np.ndarray:
        """The finest overview of one map (computed once per trace, map and head; kept while there is room)."""
        key = (id(self.trace), name, head, *self.shape)
        with _lock:
            found = _cache.get(key)
            if found is not None:
                _cache.move_to_end(key)
                return found
        found = overview.overview(self.trace, name, head, BASE_TILES, BASE_TILES).numpy()  # [≤1024, ≤1024]
        with _lock:
            if not any(k[0] == id(self.trace) for k in _cache):
                weakref.finalize(self.trace, _forget, id(self.trace))
            _cache[key] = found
            while sum(v.nbytes for v in _cache.values()) > CACHE_BYTES and len(_cache) > 1:
                _cache.popitem(last=False)
        return found


def map_source(trace: Trace, site: str, kind: str, head: int | None, *, allowed: bool = False) -> MapSource:
    """The source of step `kind` ("weights", "masked", …, or "mask") of `site`, head `head`."""
    name = names.site_entry(site, kind)
    mask = names.site_entry(site, "mask")
    shape = map_shape(trace, name)
    return MapSource(trace, name, head, (int(shape[-2]), int(shape[-1])), mask if mask in trace else None, allowed)
