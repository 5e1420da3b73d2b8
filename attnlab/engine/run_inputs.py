"""What a run may be handed besides its ids: the layer inputs a resumed run starts from (`LayerInputs`,
`Resume`, `LayerDone`) and DeBERTa's and BERT's relative position inputs (`RelativeInputs`).

A leaf of the engine (plain dataclasses over tensors): the run's context (context.py), the model, the mechanisms
that read relative positions, the run cache (runcache.py) and the lean run's replay (replay.py) share these
types without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

MEMORY = "memory"  # LayerInputs key of the encoder's output, the decoder's cross-attention memory
LayerKey = tuple[str, int] | str  # ("enc", 2), ("dec", 0) or MEMORY


@dataclass
class LayerInputs:
    """("enc", i) -> [1, S, d] entering encoder layer i; ("dec", i) -> [1, T, d]; MEMORY -> [1, S, d]."""

    tensors: dict[LayerKey, torch.Tensor] = field(default_factory=dict)

    def keep(self, key: LayerKey, x: torch.Tensor) -> None:
        self.tensors[key] = x

    def get(self, key: LayerKey) -> torch.Tensor:
        return self.tensors[key]


@dataclass(frozen=True)
class Resume:
    """Start a run at layer `layer` of stack `stack` ("enc" or "dec"), with the previous run's inputs."""

    stack: str
    layer: int
    previous: LayerInputs
    only: bool = False  # run that one layer and stop (LayerDone): a layer recomputed on read (engine/replay.py)

    def start(self, stack: str) -> int:
        """The first layer of `stack` this run computes (0: all of them)."""
        return self.layer if stack == self.stack else 0

    def skips_encoder(self) -> bool:
        return self.stack == "dec"

    def inputs_so_far(self) -> LayerInputs:
        """A new run's LayerInputs holding the previous run's for the layers it does not compute."""
        kept: dict[LayerKey, torch.Tensor] = {}
        for key, x in self.previous.tensors.items():
            stack, index = key if isinstance(key, tuple) else ("enc", 10**9)  # MEMORY: the encoder's end
            if self.stack == "dec" and (stack == "enc" or index < self.layer):
                kept[key] = x
            elif self.stack == "enc" and stack == "enc" and index < self.layer:
                kept[key] = x
        return LayerInputs(kept)


class LayerDone(Exception):
    """Raised after the one layer a Resume(only=True) run computes: the rest of the pass is not wanted."""


@dataclass(frozen=True)
class RelativeInputs:
    """What every encoder layer of one run reads of the relative positions (DeBERTa's disentangled attention,
    BERT's relative_key): the table as the layers use it and the cells' rows of it."""

    table: Tensor  # R [2k, d], after its LayerNorm when the model has one (empty for BERT's per-layer tables)
    c2p_rows: Tensor  # long [T, T]: δ(i, j) = clamp(bucket(i - j) + k, 0, 2k - 1), the row query i reads for key j
    p2c_rows: Tensor  # long [T, T]: [j, i] = clamp(-bucket(j - i) + k, 0, 2k - 1), the row key j reads for query i
