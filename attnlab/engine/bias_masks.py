"""A run's masks with the model's position bias attached (engine/position_bias.py): each self-attention
site's AttentionMask also carries the bias [1, H, Tq, Tk] of its stack, made once per stack and run.

Kept apart from position_bias.py, which layers.py imports (this module imports layers and masks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnlab.engine import names, position_bias
from attnlab.engine.layers import NEG_INF, AttentionMask
from attnlab.engine.masks import MaskBuilder

if TYPE_CHECKING:
    from attnlab.engine.context import RunContext
    from attnlab.engine.model import Transformer


class BiasedMasks(MaskBuilder):
    """MaskBuilder whose self-attention masks carry the position bias. A biased mask is never "blocks
    nothing" or "causal only": the fused kernel must be given mask + bias as a tensor."""

    def __init__(self, inner: MaskBuilder, model: Transformer, n_heads: int):
        super().__init__(inner.options, inner.record, inner.device, inner.dtype, inner.sliding_window)
        self.model = model  # the Transformer: its config and, for a learned bias, its tables
        self.config = model.config
        self.n_heads = n_heads
        self._biases: dict[tuple, Tensor] = {}  # (stack, Tq, Tk) -> [1, H, Tq, Tk]
        self._biased: dict[tuple, AttentionMask] = {}  # (stack, id of the plain mask) -> the biased one

    def __call__(self, site: str, Tq: int, Tk: int, key_pad: Tensor | None) -> AttentionMask:
        mask = super().__call__(site, Tq, Tk, key_pad)
        if not position_bias.takes_bias(self.config, site):
            return mask
        stack = names.stack_of(site)
        key = (stack, id(mask))
        biased = self._biased.get(key)
        if biased is None:
            additive = mask.additive if mask.additive is not None else self._plain(mask, Tq, Tk)  # [1, 1, Tq, Tk]
            bias = self._bias(stack, Tq, Tk)  # [1, H, Tq, Tk]
            biased = AttentionMask(additive, blocked_rows=mask.blocked_rows, bias=bias)
            self._biased[key] = biased
        return biased

    def _bias(self, stack: str, Tq: int, Tk: int) -> Tensor:
        key = (stack, Tq, Tk)
        if key not in self._biases:
            self._biases[key] = position_bias.stack_bias(
                self.model, stack, self.n_heads, Tq, Tk, self.device, self.dtype
            )
        return self._biases[key]

    def _plain(self, mask: AttentionMask, Tq: int, Tk: int) -> Tensor:
        """The tensor of a mask a run without recording did not build: the causal triangle or zeros."""
        if mask.causal_only:
            return torch.full((Tq, Tk), NEG_INF, dtype=self.dtype, device=self.device).triu_(1)[None, None]
        return torch.zeros(1, 1, Tq, Tk, dtype=self.dtype, device=self.device)


def with_position_bias(ctx: RunContext, model: Transformer) -> None:
    """Give the run's masks the position bias of `model` (the Transformer) when it has one and positions are on."""
    if model.config.position_bias != "none" and ctx.options.positional:
        ctx.masks = BiasedMasks(ctx.masks, model, ctx.n_heads)
