"""A run's masks with the model's position bias attached (engine/position_bias.py): each self-attention
site's AttentionMask also carries the bias [1, H, Tq, Tk] of its stack, made once per stack and run.

Kept apart from position_bias.py, which layers.py imports (this module imports masks).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.engine import names, position_bias
from attnlab.engine.config import ModelConfig
from attnlab.engine.masks import NEG_INF, AttentionMask, MaskBuilder


class BiasedMasks(MaskBuilder):
    """MaskBuilder whose self-attention masks carry the position bias. A biased mask is never "blocks
    nothing" or "causal only": the fused kernel must be given mask + bias as a tensor."""

    def __init__(self, inner: MaskBuilder, config: ModelConfig, tables: nn.Module, n_heads: int):
        super().__init__(inner.options, inner.record, inner.device, inner.dtype, inner.sliding_window)
        self.tables = tables  # the module holding a learned bias's tables (position_bias.add_bias_tables)
        self.config = config
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
                self.config, self.tables, stack, self.n_heads, Tq, Tk, self.device, self.dtype
            )
        return self._biases[key]

    def _plain(self, mask: AttentionMask, Tq: int, Tk: int) -> Tensor:
        """The tensor of a mask a run without recording did not build: the causal triangle or zeros."""
        if mask.causal_only:
            return torch.full((Tq, Tk), NEG_INF, dtype=self.dtype, device=self.device).triu_(1)[None, None]
        return torch.zeros(1, 1, Tq, Tk, dtype=self.dtype, device=self.device)


def with_position_bias(
    masks: MaskBuilder, config: ModelConfig, tables: nn.Module, n_heads: int, positional: bool
) -> MaskBuilder:
    """The run's masks with the position bias of a model with `config` (its learned tables in `tables`) when it
    has one and positions are on (`positional`); `masks` itself otherwise."""
    if config.position_bias != "none" and positional:
        return BiasedMasks(masks, config, tables, n_heads)
    return masks
