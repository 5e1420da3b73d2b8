"""A Trace written to an .npz file one entry at a time (issue 34): `attnlab trace --out`, File → Export → .npz.

The file is what `np.savez` writes (a zip of `<name>.npy` members, stored, zip64; token lists as unicode arrays;
the run's notices under `__notices__`), so `np.load(path, allow_pickle=False)` reads it as before. But no
entry is held longer than its own write: each is computed where the run left it (a derived map, a lean
layer's entry recomputed with its layer, engine/replay.py, the layers in run order so each runs again once),
copied to the host in the public dtype, written into its zip member with numpy's own `format.write_array`
(16 MiB at a time), and let go. Memory while writing: the trace, the few derived values the Trace keeps
(RECENT_DERIVED), the recomputed layers the replay keeps (KEPT_LAYERS) and one entry.

`plan_npz` knows the file's size and that memory before anything is written: the shape of every entry, from
the stored tensors, from torch's meta device for the derived rules (no arithmetic, no memory), and for a
lean run's layers from the first layer of each stack run again (every layer of a stack records the same
shapes). Qt-free.
"""

from __future__ import annotations

import os
import queue
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnlab.engine import names
from attnlab.engine.budget import HEADROOM
from attnlab.engine.derived import Derived, compute
from attnlab.engine.memory import gb, host_available
from attnlab.engine.replay import KEPT_LAYERS
from attnlab.engine.replay import RULE as REPLAY_RULE
from attnlab.fileio import atomic_write

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

NOTICES = "__notices__"
# a zip member of a seekable file: local header 30 + its zip64 extra 20, central directory record 46, each + the
# name; the central record's own zip64 extra (up to 28) only past 4 GiB; the end record 22 (+ 76 in zip64)
ZIP_MEMBER = 96
ZIP_END = 98
WRITE_BUFFER = 16 << 20  # numpy's write_array hands a zip member 16 MiB at a time
AHEAD = 2  # entries computed ahead of the one being written (write_npz)


@dataclass(frozen=True)
class NpzPlan:
    """What writing a trace will take: the entries in order, their host shapes and dtypes, the file's size,
    and the memory the write holds at its peak beyond the trace itself."""

    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, np.dtype]
    file_bytes: int
    peak_bytes: int

    @property
    def entries(self) -> int:
        return len(self.shapes)

    def summary(self, path: str) -> str:
        return f"writing {gb(self.file_bytes)} to {path} ({self.entries:,} entries)"


def plan_npz(trace: Trace, skip: frozenset[str] = frozenset()) -> NpzPlan:
    """The NpzPlan of `trace`, without the entries named in `skip` (one layer per stack of a lean run runs
    again; nothing else is computed)."""
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, np.dtype] = {}
    by_pattern: dict[tuple[str, str], tuple[tuple[int, ...], np.dtype]] = {}
    for name, entry in trace.entries.items():
        if name in skip:
            continue
        if isinstance(entry, list):
            value = np.asarray(entry)
            shapes[name], dtypes[name] = value.shape, value.dtype
        elif isinstance(entry, torch.Tensor):
            shapes[name], dtypes[name] = tuple(entry.shape), _public(entry.dtype)
        else:
            shapes[name], dtypes[name] = _derived_shape(trace, name, entry, shapes, dtypes, by_pattern)
    notices = np.asarray(trace.notices, dtype=str)
    shapes[NOTICES], dtypes[NOTICES] = notices.shape, notices.dtype
    sizes = {n: int(np.prod(shapes[n], dtype=np.int64)) * dtypes[n].itemsize for n in shapes}
    file_bytes = ZIP_END + sum(
        size + npy_header_bytes(shapes[n], dtypes[n]) + ZIP_MEMBER + 2 * len(f"{n}.npy") for n, size in sizes.items()
    )
    computed = sorted((sizes[n] for n in shapes if isinstance(trace.entries.get(n), Derived)), reverse=True)
    # the derived values the Trace keeps, the one being computed, those waiting and the one being written
    recent = sum(computed[: _recent_kept() + AHEAD + 2])
    layers: dict[tuple[str, int], int] = {}
    for n, e in trace.entries.items():
        if (
            n in shapes
            and isinstance(e, Derived)
            and e.rule == REPLAY_RULE
            and (where := names.layer_position(n)) is not None
        ):
            layers[where] = layers.get(where, 0) + sizes[n]
    replayed = KEPT_LAYERS * max(layers.values(), default=0)
    return NpzPlan(shapes, dtypes, file_bytes, recent + replayed + WRITE_BUFFER)


def npz_refusal(the_plan: NpzPlan, path: str) -> str:
    """Why this write cannot fit the memory there is (ATTNLAB_MEMORY_LIMIT included); empty when it fits."""
    room = int(HEADROOM * host_available())
    if the_plan.peak_bytes <= room:
        return ""
    return (
        f"{the_plan.summary(path)} needs about {gb(the_plan.peak_bytes)} of memory while it writes (one recomputed "
        f"layer and a few derived entries at a time), but only {gb(room)} is available; nothing was written"
    )


def write_npz(trace: Trace, path: str | os.PathLike[str], the_plan: NpzPlan | None = None) -> None:
    """Write every entry of `trace` (those of `the_plan`, when given) to `path` (.npz) one at a time, through
    attnlab.fileio.atomic_write (a failure leaves an existing file as it was; WriteError, an OSError, says why).

    The entries are computed on a helper thread while this one writes the previous ones to disk (at most
    AHEAD of them wait between the two), so the file's bytes go out while the next layer runs again."""
    order = list(trace.entries) if the_plan is None else [n for n in the_plan.shapes if n != NOTICES]

    def write(tmp: os.PathLike[str]) -> None:
        with open(tmp, "wb") as f, zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            for name, array in _computed(trace, order):
                _member(z, name, array)
            _member(z, NOTICES, np.asarray(trace.notices, dtype=str))

    atomic_write(path, write)


def _computed(trace: Trace, order: list[str]) -> Iterator[tuple[str, np.ndarray]]:
    """(name, host array) of each entry of `order`, computed on a helper thread at most AHEAD entries ahead of
    the reader; an error there is raised here. Leaving early (an error while writing) stops the helper at its
    next entry."""
    waiting: queue.Queue[tuple[str, np.ndarray] | BaseException | None] = queue.Queue(maxsize=AHEAD)
    stop = threading.Event()

    def hand(item: tuple[str, np.ndarray] | BaseException | None) -> None:
        while not stop.is_set():
            try:
                waiting.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def produce() -> None:
        try:
            for name in order:
                if stop.is_set():
                    return
                hand((name, trace.host_array(name)))
            hand(None)
        except BaseException as e:  # handed to the writer
            hand(e)

    helper = threading.Thread(target=produce, name="attnlab-trace-file", daemon=True)
    helper.start()
    try:
        while (item := waiting.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
        helper.join()
    finally:
        stop.set()


def npy_header_bytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Bytes of the .npy header numpy's write_array puts before an array of `shape` and `dtype` (format 1.0:
    magic, version, length, the header dict padded with spaces and a newline to a multiple of 64)."""
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(shape)}
    text = "{" + "".join(f"'{key}': {header[key]!r}, " for key in sorted(header)) + "}"
    unpadded = 10 + len(text) + 1
    return unpadded + (-unpadded % 64)


def _member(z: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    """One array as the zip member `<name>.npy`, as np.savez writes it (zip64 forced, no pickles)."""
    with z.open(f"{name}.npy", "w", force_zip64=True) as member:
        np.lib.format.write_array(member, array, allow_pickle=False)


def _public(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype an entry is written in: float32 for floating tensors, int64 for the rest (trace.host_dtype)."""
    return np.dtype(np.float32) if dtype.is_floating_point else np.dtype(np.int64)


def _derived_shape(
    trace: Trace,
    name: str,
    entry: Derived,
    shapes: dict[str, tuple[int, ...]],
    dtypes: dict[str, np.dtype],
    by_pattern: dict[tuple[str, str], tuple[tuple[int, ...], np.dtype]],
) -> tuple[tuple[int, ...], np.dtype]:
    """The host shape and dtype of a derived entry: a lean layer's entry as the same entry of its stack's layer
    that ran again; a rule on meta tensors of its inputs' shapes; else (a rule meta tensors cannot run) its
    value, computed."""
    where = names.layer_position(name)
    if entry.rule == REPLAY_RULE and where is not None:
        key = (where[0], name.split(".", 2)[2])  # 'dec.5.self.q' -> ('dec', 'self.q')
        if key not in by_pattern:
            value = trace.device_value(name)
            by_pattern[key] = (tuple(value.shape), _public(value.dtype))
        return by_pattern[key]
    if entry.rule in ("lens_ids", "lens_probs") and all(n in shapes for n in entry.inputs):
        # the logit lens (engine/logit_lens.py): every layer's top k at each position, [L + 1, T, k]
        rows, k = entry.inputs, int(entry.params[-1])  # type: ignore[call-overload]
        return (len(rows), shapes[rows[0]][0], k), np.dtype(np.int64 if entry.rule == "lens_ids" else np.float32)
    if all(n in shapes for n in entry.inputs):
        metas = [
            torch.empty(shapes[n], dtype=torch.float32 if dtypes[n].kind == "f" else torch.int64, device="meta")
            for n in entry.inputs
        ]
        try:
            value = compute(entry, metas)
            return tuple(value.shape), _public(value.dtype)
        except Exception:  # a rule that reads values (the logit lens's top-k): computed below
            pass
    value = trace.device_value(name)
    return tuple(value.shape), _public(value.dtype)


def _recent_kept() -> int:
    from attnlab.engine.trace import RECENT_DERIVED

    return RECENT_DERIVED
