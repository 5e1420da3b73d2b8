"""Snapshots: a model's weights at a few training steps, each step's model built on first use.

What snapshots.py reads from a snapshots file and hf_revisions.py from the Hugging Face cache's revisions
(CachedRevisions) both are; kept apart from both so that neither imports the other for it. Qt-free.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attnlab.engine.build import build_transformer
from attnlab.engine.live import LiveModel

SNAPSHOTS_FILE_KEY = "snapshots_file"  # LiveModel.metadata entry set by the loader when the file exists


@dataclass
class Snapshots:
    """A model's weights at `steps` (ascending; the last, `final_step`, is `final` itself)."""

    path: Path
    final: LiveModel  # the trained model the snapshots belong to
    final_step: int
    weights: dict[int, dict[str, torch.Tensor]]  # {step: {checkpoint tensor name: float16 tensor}}
    losses: dict[int, float] = field(default_factory=dict)  # training loss measured on each step's weights
    _models: dict[int, LiveModel] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def steps(self) -> tuple[int, ...]:
        return (*sorted(self.weights), self.final_step)

    def loss_at(self, step: int) -> float | None:
        """The training loss on this step's weights, where the file (or the final model's metadata) says it."""
        if step == self.final_step:
            final = self.final.metadata.get("training", {})
            return final.get("final_loss") if isinstance(final, dict) else None
        return self.losses.get(step)

    def tensors_at(self, step: int) -> dict[str, torch.Tensor]:
        """The checkpoint tensors at `step` as float32 (the final step: the model's own, untouched)."""
        self._check_step(step)
        if step == self.final_step:
            return {n: t.detach() for n, t in self.final.module.checkpoint_tensors().items()}
        return {n: t.to(torch.float32) for n, t in self.weights[step].items()}

    def model_at(self, step: int) -> LiveModel:
        """A LiveModel with the weights of `step` and the final model's tokenizers (built once, then kept)."""
        self._check_step(step)
        if step == self.final_step:
            return self.final
        with self._lock:  # the app builds them on its worker thread; a script may use several threads
            if step not in self._models:
                self._models[step] = self._build(step)
            return self._models[step]

    def _build(self, step: int) -> LiveModel:
        final = self.final
        module = build_transformer(final.config, initialise=False)  # every parameter is filled below
        with torch.no_grad():
            for name, param in module.checkpoint_tensors().items():
                param.copy_(self.weights[step][name])  # float16 -> float32
        module.to(next(final.module.parameters()).device)
        metadata = {k: v for k, v in final.metadata.items() if k not in ("eval", SNAPSHOTS_FILE_KEY)}
        metadata["training_step"] = step
        return LiveModel(module, final.src_tokenizer, final.tgt_tokenizer, name=final.name, metadata=metadata)

    def _check_step(self, step: int) -> None:
        if step not in self.steps:
            raise ValueError(f"there is no snapshot at step {step}; the steps are {', '.join(map(str, self.steps))}")
