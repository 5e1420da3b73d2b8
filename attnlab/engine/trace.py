"""Trace: the ordered record of one run, every intermediate under a stable dotted name."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import ItemsView, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnlab.fileio import atomic_write

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions


class Recorder:
    """Collects tensors during a forward pass. When disabled, `__call__` returns at once: capture is free.

    Tensors arrive with a batch dimension and the first sequence of the batch is kept, detached and still
    on the model's device; `finish()` moves everything to CPU float32 in one go (one device sync, not many).
    """

    __slots__ = ("enabled", "_items")

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._items: OrderedDict[str, torch.Tensor | list[str]] = OrderedDict()

    def __call__(self, name: str, tensor: torch.Tensor, batched: bool = True) -> None:
        if not self.enabled:
            return
        t = tensor[0] if batched else tensor
        self._items[name] = t.detach() if t.requires_grad else t  # detaching costs a dispatch per entry

    def tokens(self, name: str, tokens: list[str]) -> None:
        if self.enabled:
            self._items[name] = list(tokens)

    def finish(self) -> OrderedDict[str, torch.Tensor | list[str]]:
        out: OrderedDict[str, torch.Tensor | list[str]] = OrderedDict()
        for name, value in self._items.items():
            if isinstance(value, torch.Tensor):
                dtype = torch.int64 if not value.is_floating_point() else torch.float32
                if value.dtype != dtype or value.device.type != "cpu":
                    value = value.to("cpu", dtype)
            out[name] = value
        return out


@dataclass
class Trace:
    """What one run computed. `trace["enc.0.self.weights"]` is a [heads, tgt, src] float32 CPU tensor.

    Token lists (`src.tokens`, `tgt.tokens`) are lists of str; `*.ids` are int64; everything else float32.
    `config` is the model's ModelConfig and `options` the RunOptions that made this run, resolved (the norm
    placement is "pre" or "post", `n_heads` is set): read facts about the run there, never infer them from the
    numbers. `notices` holds human-readable remarks about the run (truncation, fallbacks); `info` holds facts
    about where and how fast it ran (device, timings) and what generation added (next token, text so far).
    """

    entries: OrderedDict[str, torch.Tensor | list[str]] = field(default_factory=OrderedDict)
    notices: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    config: ModelConfig | None = None
    options: RunOptions | None = None

    @property
    def n_heads(self) -> int:
        """Heads of this run (the re-split count when the head toggle is set)."""
        if self.options is not None and self.options.n_heads:
            return self.options.n_heads
        return self.config.n_heads if self.config is not None else 1

    @property
    def norm_first(self) -> bool:
        """Whether this run placed each LayerNorm before its sub-layer (pre-norm)."""
        if self.options is not None and self.options.norm in ("pre", "post"):
            return self.options.norm == "pre"
        return bool(self.config is not None and self.config.norm_first)

    @property
    def n_kv_heads(self) -> int:
        """K/V heads of this run: as many as Q heads, except in grouped-query attention, where a re-split into
        h heads reads W_K/W_V as h * kv_heads / n_heads heads (`.k` and `.v` entries are [H_kv, T, d_k])."""
        if self.config is None:
            return self.n_heads
        return self.n_heads * self.config.kv_heads // self.config.n_heads

    @property
    def kv_head_map(self) -> list[int]:
        """For each Q head of this run, the K/V head it reads (grouped-query attention shares one K/V head
        among consecutive Q heads: [0, 0, 1, 1] for 4 Q and 2 K/V heads; [0, 1, 2, …] otherwise)."""
        from attnlab.engine import names

        return names.kv_head_map(self.n_heads, self.n_kv_heads)

    def __getitem__(self, name: str) -> Any:  # a tensor, or a list of token strings
        try:
            return self.entries[name]
        except KeyError:
            raise KeyError(f"{name!r} is not in this trace") from None

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, name: str, default: Any = None) -> Any:
        return self.entries.get(name, default)

    def names(self) -> list[str]:
        return list(self.entries)

    def items(self) -> ItemsView[str, Any]:
        return self.entries.items()

    def numpy(self, name: str) -> np.ndarray:
        value = self[name]
        return np.asarray(value) if isinstance(value, list) else value.numpy()

    def sites(self) -> list[str]:
        """Attention sites in run order, e.g. ['enc.0.self', ..., 'dec.0.self', 'dec.0.cross', ...]."""
        from attnlab.engine import names

        return [site for n in self.entries if n.endswith(".weights") and (site := names.site_of(n))]

    def save_npz(self, path: str | os.PathLike[str]) -> None:
        """Every entry under its dotted name; token lists as unicode arrays (loadable without pickle).
        Raises attnlab.fileio.WriteError (an OSError) when the file cannot be written."""
        arrays = {name: self.numpy(name) for name in self.entries}
        arrays["__notices__"] = np.asarray(self.notices, dtype=str)
        path = str(path) if str(path).endswith(".npz") else f"{path}.npz"  # the name np.savez would use

        def write(tmp: str) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)

        atomic_write(path, write)  # a failed write leaves an existing file as it was
