"""Soft-capping (Gemma 2): scores squashed smoothly into (−cap, cap) by cap · tanh(x / cap), as its own step
between scaling and the mask (ModelConfig.attn_softcap), and the same on the logits (final_softcap).

The fused kernel cannot soft-cap, so a soft-capped site computes its context step by step even when nothing
is recorded (layers.attend hands it to attention_steps with `dense_mask`); a recording run keeps the capped
map as a rule derived on read (derived.py "softcap"). Shapes: B batch, H heads, Tq queries, Tk keys.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.derived import Derived, soft_cap
from attnlab.engine.recorder import Recorder

if TYPE_CHECKING:
    from attnlab.engine.masks import AttentionMask

__all__ = ["capped_rule", "dense_mask", "record_capped", "soft_cap"]


@lru_cache(maxsize=4096)
def capped_rule(site: str, cap: float) -> Derived:
    """How a site's capped scores are derived from its scaled ones on read."""
    return Derived("softcap", (names.site_entry(site, "scaled"),), (cap,))


def record_capped(rec: Recorder, site: str, capped: Tensor | None, cap: float) -> None:
    """Record the capped scores [B, H, Tq, Tk] (an eager recorder keeps the value; a lazy one, or a run that
    never made the map (None), the rule)."""
    rule = capped_rule(site, cap)
    rec.add(((names.capped(site), rule if capped is None else rec.rule(capped, rule)),))


def dense_mask(mask: AttentionMask, Tq: int, Tk: int, like: Tensor) -> Tensor:
    """The additive mask [B|1, 1, Tq, Tk] of an AttentionMask, made when a run that records nothing left it out
    (it blocks nothing, or only the causal triangle)."""
    if mask.additive is not None:
        return mask.additive
    blocked = float("-inf") if mask.causal_only else 0.0
    return torch.full((Tq, Tk), blocked, dtype=like.dtype, device=like.device).triu_(1)[None, None]


def cap_logits(logits: Tensor, cap: float, rec: Recorder) -> Tensor:
    """logits [B, T, V] -> cap · tanh(logits / cap) when `cap` (final_logit_softcapping), recording the logits
    before the cap (names.UNCAPPED_LOGITS); the same tensor when 0."""
    if not cap:
        return logits
    rec(names.UNCAPPED_LOGITS, logits)
    return soft_cap(logits, cap)
