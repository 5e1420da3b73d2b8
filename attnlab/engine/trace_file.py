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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from attnlab.engine import names
from attnlab.engine.derived import RECENT_DERIVED, Derived, Readable, compute
from attnlab.engine.memory import RunTooBig, give_back_freed
from attnlab.engine.output_budget import amount, disk_refusal, memory_refusal
from attnlab.engine.recorder import Entry
from attnlab.engine.replay import KEPT_LAYERS
from attnlab.engine.replay import RULE as REPLAY_RULE
from attnlab.fileio import atomic_write


class Trace(Readable, Protocol):
    """What writing reads of a trace.Trace (which imports this module to write itself: Trace.save_npz)."""

    @property
    def entries(self) -> Mapping[str, Entry]: ...

    @property
    def notices(self) -> Sequence[str]: ...

    def host_array(self, name: str) -> np.ndarray: ...


NOTICES = "__notices__"
# a zip member of a seekable file: local header 30 + its zip64 extra 20, central directory record 46, each + the
# name; the central record's own zip64 extra (up to 28) only past 4 GiB; the end record 22 (+ 76 in zip64)
ZIP_MEMBER = 96
ZIP_END = 98
WRITE_BUFFER = 16 << 20  # numpy's write_array hands a zip member 16 MiB at a time
AHEAD = 1  # entries waiting to be written while the next is computed (write_npz)


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
        return f"writing {amount(self.file_bytes)} to {path} ({self.entries:,} entries)"


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
    # the derived values the Trace keeps, the one being computed (with a rule's temporaries: two more of its
    # size, as the softmax of the probabilities makes), those waiting and the one being written
    recent = sum(computed[: _recent_kept() + AHEAD + 2]) + 2 * (computed[0] if computed else 0)
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


def npz_refusal(the_plan: NpzPlan, path: str | os.PathLike[str]) -> str:
    """Why this write cannot start (empty when it can): the memory it holds while writing against what there is
    (ATTNLAB_MEMORY_LIMIT included), the file's size against the free space of its folder (output_budget.py)."""
    said = the_plan.summary(str(path))
    refusal = memory_refusal(said, the_plan.peak_bytes)  # one recomputed layer and a few derived entries at a time
    refusal = refusal or disk_refusal(said, path, the_plan.file_bytes)
    return f"{refusal}; nothing was written" if refusal else ""


def write_npz(trace: Trace, path: str | os.PathLike[str], the_plan: NpzPlan | None = None) -> None:
    """Write every entry of `trace` (those of `the_plan`, when given) to `path` (.npz) one at a time, through
    attnlab.fileio.atomic_write (a failure leaves an existing file as it was; WriteError, an OSError, says why).
    A write that cannot fit the memory or the disk (npz_refusal) is refused first: RunTooBig, nothing written.

    The entries are computed on this thread (where the trace and the model were made, so the allocator reuses
    their freed memory) while a helper thread writes the previous one to disk (at most AHEAD wait between
    the two): the file's bytes go out while the next layer runs again."""
    the_plan = plan_npz(trace) if the_plan is None else the_plan
    refusal = npz_refusal(the_plan, path)
    if refusal:
        raise RunTooBig(refusal)
    order = [n for n in the_plan.shapes if n != NOTICES]

    def write(tmp: os.PathLike[str]) -> None:
        with open(tmp, "wb") as f, zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            with _Writer(z) as writer:
                for name in order:
                    array = trace.host_array(name)
                    if array.nbytes >= WRITE_BUFFER:
                        give_back_freed()  # what computing it freed (engine/memory.py)
                    writer.put(name, array)
                writer.put(NOTICES, np.asarray(trace.notices, dtype=str))

    atomic_write(path, write)


class _Writer:
    """Writes (name, array) members into a zip on a helper thread; `put` waits while AHEAD are waiting and
    raises what the helper met (a full disk). Leaving the `with` waits for the helper to finish its member."""

    def __init__(self, z: zipfile.ZipFile):
        self._z = z
        self._waiting: queue.Queue[tuple[str, np.ndarray] | None] = queue.Queue(maxsize=AHEAD)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="attnlab-trace-file", daemon=True)

    def __enter__(self) -> _Writer:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while (item := self._waiting.get()) is not None:
                _member(self._z, *item)
        except BaseException as e:  # raised on the computing thread by its next put
            self._error = e
            while self._waiting.get() is not None:  # let the computing thread go on to its own end
                pass

    def put(self, name: str, array: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._waiting.put((name, array))

    def __exit__(self, *exc: object) -> None:
        self._waiting.put(None)
        self._thread.join()
        if self._error is not None and exc[0] is None:
            raise self._error


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
    return RECENT_DERIVED
