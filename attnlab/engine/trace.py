"""Trace: the ordered record of one run, every intermediate under a stable dotted name.

The entries stay where the model ran (its device, its dtype). A tensor crosses to the host only when someone
reads it — `trace[name]`, one slice (`trace.read(name, index)`), `save_npz`, `to("cpu")` — and then once:
the host copy is cached. Entries that are a cheap function of stored ones are `Derived` placeholders
(engine/derived.py), computed on read (a large attention map one head or block of rows at a time:
engine/derived_blocks.py). This module is the reading side; recording is engine/recorder.py, a leaf the model's
layers import (`finish` makes a Trace of what a Recorder collected).
"""

from __future__ import annotations

import dataclasses
import os
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnlab.engine import derived_blocks, names
from attnlab.engine.derived import RECENT_DERIVED, SLICEABLE, Derived, compute
from attnlab.engine.recorder import (
    REPLAY_RULE,
    Entry,
    LayerPlaceholders,
    Recorder,
    copy_to_host,
    off_host,
    storage_key,
)

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import ResolvedOptions
    from attnlab.engine.trace_file import NpzPlan

COPY_BATCH_BYTES = 256 << 20  # a read of many entries copies them to the host in batches of about this size


def finish(
    rec: Recorder, config: ModelConfig, options: ResolvedOptions, device: str, notices: list[str] | None = None
) -> Trace:
    """The entries `rec` recorded as a Trace of the run made with `config` and `options` on `device`."""
    return Trace(rec.entries(), config=config, options=options, device=device, notices=list(notices or []))


@dataclass(frozen=True)
class Trace:
    """What one run computed. `trace["enc.0.self.weights"]` is a [heads, tgt, src] float32 CPU tensor.

    Token lists (`src.tokens`, `tgt.tokens`) are lists of str; `*.ids` are int64; everything else float32.
    A Trace is whole when it is made: `config` is the model's ModelConfig, `options` the ResolvedOptions that
    made this run (RunOptions.resolved: the norm placement is "pre" or "post", the heads are set; read every
    fact about the run there, never infer it from the numbers), `device` where it ran ("cpu", "cuda:0") and
    `notices` the human-readable remarks about the run (truncation, fallbacks). `info` holds what was
    measured (timings, what the trace keeps). Frozen: `notices` is a tuple and `info` a read-only mapping;
    what is learnt after the run (generation's next token, the session's job time) makes a new Trace
    (`with_info`, `with_notices`) that shares the entries and their host copies.

    `entries` holds what was stored: tensors on the run's device, token lists, and `Derived` rules. Reading
    (`trace[name]`, `read`, `fetch`) gives host tensors, cached; `device_value(name)` gives the value where
    it lives.
    """

    entries: OrderedDict[str, Entry]
    _: KW_ONLY
    config: ModelConfig
    options: ResolvedOptions
    device: str
    notices: Sequence[str]  # a tuple once made
    info: Mapping[str, Any] = field(default_factory=dict)  # read-only once made
    _host: dict[str, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)
    _recent: OrderedDict[str, torch.Tensor] = field(default_factory=OrderedDict, repr=False, compare=False)
    _home: tuple[torch.device, torch.dtype] | None = field(default=None, repr=False, compare=False)  # stored floats
    # the traces sharing these entries (this one and its `with_info` copies), weakly: move_to_host moves them all
    _kin: list[weakref.ref[Trace]] = field(default_factory=list, repr=False, compare=False)
    # a `with_info` copy holds the trace it was made from: whoever tracks that one (LiveModel, to give the GPU's
    # memory back) reaches the copy's entries through it while the copy lives
    _origin: Trace | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "notices", tuple(self.notices))
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))
        self._kin[:] = [ref for ref in self._kin if ref() is not None] + [weakref.ref(self)]

    def with_info(self, **info: Any) -> Trace:
        """This trace with `info` added (or replaced): a new Trace sharing the entries and their host copies."""
        return dataclasses.replace(self, info={**self.info, **info}, _origin=self)

    def with_notices(self, *notices: str) -> Trace:
        """This trace with `notices` said after its own: a new Trace sharing the entries and their host copies."""
        return dataclasses.replace(self, notices=(*self.notices, *notices), _origin=self)

    @property
    def n_heads(self) -> int:
        """Heads of this run (the re-split count when the head toggle is set): `options.heads`."""
        return self.options.heads

    @property
    def n_kv_heads(self) -> int:
        """K/V heads of this run (`.k` and `.v` entries are [H_kv, T, d_k]): `options.n_kv_heads`."""
        return self.options.n_kv_heads

    @property
    def kv_head_map(self) -> list[int]:
        """For each Q head of this run, the K/V head it reads (grouped-query attention shares one K/V head
        among consecutive Q heads: [0, 0, 1, 1] for 4 Q and 2 K/V heads; [0, 1, 2, …] otherwise)."""
        return names.kv_head_map(self.n_heads, self.n_kv_heads)

    # ---- reading --------------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:  # a host tensor, or a list of token strings
        return self.fetch([name])[0]

    def fetch(self, names: Iterable[str]) -> list:
        """Host values of several entries, copied in one batch (one device synchronisation)."""
        names = list(names)
        for name in names:
            if name not in self.entries:
                raise KeyError(f"{name!r} is not in this trace")
        missing = [n for n in names if n not in self._host and not isinstance(self.entries[n], list)]
        if missing:
            self._materialise(missing)
        return [self.entries[n] if isinstance(self.entries[n], list) else self._host[n] for n in names]

    def _materialise(self, names: list[str]) -> None:
        """Copy these tensor entries to the host; entries sharing storage with a cached one reuse its copy.

        Derived values are computed on the device and copied in batches of about COPY_BATCH_BYTES, each
        freed on the device once it has landed: reading a whole trace (`to("cpu")`, `save_npz`) never holds
        every derived [H, T, T] matrix on the GPU at once. A read of more than one batch lands in ordinary
        memory (copy_to_host's keep_pinned)."""
        by_storage = {
            storage_key(entry): self._host[n] for n in self._host if isinstance(entry := self.entries[n], torch.Tensor)
        }
        todo: list[tuple[str, torch.Tensor]] = []
        todo_bytes, batches = 0, 0
        for name in names:
            value = self.device_value(name)
            key = storage_key(value) if isinstance(self.entries[name], torch.Tensor) else None
            if key is not None and key in by_storage:
                self._host[name] = by_storage[key]
                continue
            todo.append((name, value))
            todo_bytes += value.numel() * value.element_size()
            if todo_bytes >= COPY_BATCH_BYTES:
                self._land(todo, by_storage, keep_pinned=False)
                todo, todo_bytes, batches = [], 0, batches + 1
        self._land(todo, by_storage, keep_pinned=batches == 0)

    def _land(
        self, todo: list[tuple[str, torch.Tensor]], by_storage: dict[tuple, torch.Tensor], keep_pinned: bool
    ) -> None:
        """Host copies of `todo`'s (name, device value) pairs into the cache, in one batch."""
        for (name, value), host in zip(todo, copy_to_host([v for _, v in todo], keep_pinned), strict=True):
            self._host[name] = host
            if isinstance(self.entries[name], torch.Tensor):
                by_storage[storage_key(value)] = host

    def device_value(self, name: str) -> torch.Tensor:
        """The entry where the run left it (derived entries computed there; the last few are kept, so reading
        one head after another of the same site computes the site once)."""
        entry = self.entries[name]
        if isinstance(entry, Derived):
            if name in self._host and self._host_copy_is_device_value(self._host[name]):
                return self._host[name]
            if name in self._recent:
                self._recent.move_to_end(name)
                return self._recent[name]
            if derived_blocks.is_big_map(self, name):  # block by block, and not kept: it is big
                return derived_blocks.heads_value(self, name)
            value = compute(entry, [self.device_value(n) for n in entry.inputs])
            self._recent[name] = value
            while len(self._recent) > RECENT_DERIVED:
                self._recent.popitem(last=False)
            return value
        if isinstance(entry, list):
            raise TypeError(f"{name!r} is a token list, not a tensor")
        return entry

    def _host_copy_is_device_value(self, copy: torch.Tensor) -> bool:
        """Whether a host copy can stand in for the value where the run left it (a CPU run in the public
        dtype). A GPU run's derived entries are computed from GPU inputs only: a host copy mixed in would
        put two devices in one operation."""
        if self._home is None:
            stored = (v for v in self.entries.values() if isinstance(v, torch.Tensor) and v.is_floating_point())
            first = next(stored, None)
            home = (first.device, first.dtype) if first is not None else (copy.device, copy.dtype)
            object.__setattr__(self, "_home", home)  # a cache: frozen fields are what the run made
        return (copy.device, copy.dtype) == self._home

    def on_host(self, name: str) -> bool:
        """Whether reading `name` costs nothing: its host copy is cached (or it is a token list)."""
        return name in self._host or isinstance(self.entries.get(name), list)

    def recomputed_inputs(self, names: Iterable[str]) -> list[str]:
        """The entries recomputed on read (a lean run's layers, engine/replay.py) that reading `names` needs,
        directly or through derived rules, and that are not on the host yet: what is slow to read."""
        out: list[str] = []
        todo, seen = list(names), set()
        while todo:
            name = todo.pop()
            entry = self.entries.get(name)
            if name in seen or not isinstance(entry, Derived) or self.on_host(name):
                continue
            seen.add(name)
            if entry.rule == REPLAY_RULE:
                out.append(name)
            todo.extend(entry.inputs)
        return out

    def read(self, name: str, index: int | slice | tuple[int | slice, ...]) -> torch.Tensor:
        """Only `value[index]` of an entry on the host (e.g. one head: `trace.read(site + '.weights', h)`),
        without moving the rest; the whole entry is read from the cache when it is already there."""
        if name in self._host:
            return self._host[name][index]
        if name not in self.entries:
            raise KeyError(f"{name!r} is not in this trace")
        if isinstance(index, int):
            return copy_to_host([self._first_dim_slice(name, index)])[0]
        return copy_to_host([self.device_value(name)[index]])[0]

    def _first_dim_slice(self, name: str, i: int) -> torch.Tensor:
        """value[i] of an entry, where it lives; a derived entry whose rule works along the first dimension
        computes only that slice (one head's scores … weights, one position's probabilities)."""
        entry = self.entries[name]
        if name not in self._host and name not in self._recent and derived_blocks.is_big_map(self, name):
            return derived_blocks.head_value(self, name, i)  # that head alone, block of rows by block of rows
        if (
            isinstance(entry, Derived)
            and name not in self._host
            and name not in self._recent
            and entry.rule in SLICEABLE
        ):
            inputs = [
                self._first_dim_slice(n, i) if sliced else self.device_value(n)
                for n, sliced in zip(entry.inputs, SLICEABLE[entry.rule], strict=True)
            ]
            return compute(entry, inputs)
        return self.device_value(name)[i]

    def slice(self, name: str, head: int) -> torch.Tensor:
        """One head of a per-head entry ([H, ...] -> [...])."""
        return self.read(name, head)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.entries else default

    def names(self) -> list[str]:
        return list(self.entries)

    def items(self) -> list[tuple[str, Any]]:
        """(name, host value) of every entry, in run order (materialises everything)."""
        return list(zip(self.entries, self.fetch(self.entries), strict=True))

    def numpy(self, name: str) -> np.ndarray:
        value = self[name]
        return np.asarray(value) if isinstance(value, list) else value.numpy()

    def sites(self) -> list[str]:
        """Attention sites in run order, e.g. ['enc.0.self', ..., 'dec.0.self', 'dec.0.cross', ...]."""
        return [site for n in self.entries if names.step_of(n) == "weights" and (site := names.site_of(n))]

    # ---- where it lives -------------------------------------------------------------------------------
    def stored_bytes(self) -> int:
        """Bytes the stored tensors hold where they live, each storage counted once (derived entries: 0; a
        slice of a model table, like the positions, counts as its own size)."""
        held: dict[tuple[torch.device, int], int] = {}  # storage -> the largest view of it the trace keeps
        for value in self.entries.values():
            if isinstance(value, torch.Tensor):
                key = (value.device, value.untyped_storage().data_ptr())
                held[key] = max(held.get(key, 0), value.numel() * value.element_size())
        return sum(held.values())

    def move_to_host(self, copies: dict[tuple, torch.Tensor] | None = None) -> None:
        """Move the stored tensors off the device into host memory, in their dtype, so that the device's memory
        is free for the next run while this trace stays on screen (LiveModel.trace, issue 23). It reads the
        same values: derived entries are computed on the host from then on, recomputed layers run on the
        model's device and land on the host (engine/replay.py). Nothing to do for a CPU run. `copies`: host
        copies by storage, shared by traces that share tensors (a run and its temperature variants). The
        entries are swapped in one assignment, so a reader on another thread sees one dict or the other; the
        `with_info` copies sharing them swap too."""
        copies = {} if copies is None else copies
        moved: OrderedDict[str, Entry] = OrderedDict()
        for name, value in self.entries.items():
            if isinstance(value, torch.Tensor) and off_host(value):
                key = storage_key(value)
                if key not in copies:
                    copies[key] = value.to("cpu")
                value = copies[key]
            elif isinstance(value, Derived) and value.rule == REPLAY_RULE:
                replay: LayerPlaceholders = value.params[0]  # type: ignore[assignment]
                replay.move_to_host()
            moved[name] = value
        before = self.entries
        for kin in [ref() for ref in self._kin]:
            if kin is not None and kin.entries is before:
                object.__setattr__(kin, "entries", moved)
                object.__setattr__(kin, "_home", None)
        self._recent.clear()

    def to(self, device: str | torch.device = "cpu") -> Trace:
        """A Trace whose every entry (derived ones included) is a concrete tensor on `device`; "cpu" gives the
        public dtypes (float32, int64), everything materialised."""
        device = torch.device(device)
        if device.type == "cpu":
            entries = OrderedDict(self.items())
        else:
            entries = OrderedDict(
                (n, v if isinstance(v, list) else self.device_value(n).to(device)) for n, v in self.entries.items()
            )
        return Trace(
            entries,
            config=self.config,
            options=self.options,
            device=str(device),
            notices=list(self.notices),
            info=dict(self.info),
        )

    def host_array(self, name: str) -> np.ndarray:
        """One entry on the host as numpy (float32 / int64; a token list as a unicode array), read without
        keeping a copy in the trace's host cache: what writing a whole trace reads, entry after entry."""
        entry = self.entries[name]
        if isinstance(entry, list):
            return np.asarray(entry)
        if name in self._host:
            return self._host[name].numpy()
        return copy_to_host([self.device_value(name)], keep_pinned=False)[0].numpy()

    def save_npz(self, path: str | os.PathLike[str], plan: NpzPlan | None = None) -> None:
        """Every entry under its dotted name (those of `plan`, engine/trace_file.plan_npz, when given); token
        lists as unicode arrays (loadable without pickle), written one entry at a time (engine/trace_file.py).
        Raises attnlab.fileio.WriteError (an OSError) when the file cannot be written, and RunTooBig (a ValueError,
        one line, nothing written) when the write cannot fit the memory or its folder's free space."""
        from attnlab.engine.trace_file import write_npz

        path = str(path) if str(path).endswith(".npz") else f"{path}.npz"  # the name np.savez would use
        write_npz(self, path, plan)
