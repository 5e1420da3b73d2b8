"""Soft-capping (Gemma 2): scores squashed smoothly into (−cap, cap) by cap · tanh(x / cap), as its own score step
between scaling and the mask (ModelConfig.attn_softcap), and the same on the logits (final_softcap).

The whole mechanism is here: the step (`SoftCap`: forward, rule, stage), its rule (registered with derived.py)
and its registration (`MECHANISM`; its entry in mechanisms.REGISTRY). The fused kernel cannot soft-cap
(`fusable` False), so a soft-capped site computes its context step by step even when nothing is recorded
(layers.attend); a recording run keeps the capped map as a rule derived on read. Shapes: B batch, H heads,
Tq queries, Tk keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.derived import register
from attnlab.engine.recorder import Recorder
from attnlab.engine.score_step import Mechanism, RunKey, ScoreStep, SiteRun

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig

__all__ = ["MECHANISM", "SoftCap", "cap_logits", "soft_cap"]


def soft_cap(scores: Tensor, cap: float) -> Tensor:
    """scores [..] -> cap · tanh(scores / cap), in transformers' order (a new tensor)."""
    return torch.tanh(scores / cap) * cap


register("softcap", soft_cap, (True,), map_rule=True)


@dataclass(frozen=True, eq=False)
class SoftCap(ScoreStep):
    """capped = cap · tanh(x / cap) [B, H, Tq, Tk]: a new tensor (the map before it is left as it was)."""

    cap: float = 0.0

    fusable = False  # no fused kernel soft-caps

    def apply(self, x: Tensor, run: SiteRun, in_place: bool) -> Tensor:
        return soft_cap(x, self.cap)

    def params(self, key: RunKey) -> tuple[object, ...]:
        return (self.cap,)


class _SoftCapping(Mechanism):
    name = "softcap"

    def map_steps(self, config: ModelConfig) -> tuple[ScoreStep, ...]:
        return (SoftCap("capped", "softcap", config.attn_softcap),) if config.attn_softcap else ()


MECHANISM = _SoftCapping()


def cap_logits(logits: Tensor, cap: float, rec: Recorder) -> Tensor:
    """logits [B, T, V] -> cap · tanh(logits / cap) when `cap` (final_logit_softcapping), recording the logits
    before the cap (names.UNCAPPED_LOGITS); the same tensor when 0."""
    if not cap:
        return logits
    rec(names.UNCAPPED_LOGITS, logits)
    return soft_cap(logits, cap)
