"""Attention masks of a run: additive masks built from the RunOptions, once per distinct mask, each handed to
its sites as an AttentionMask (what is known about it, so the fused kernel gets the cheapest form).

A mask is [B or 1, 1, Tq, Tk]: 0 where a query may look, -inf where it may not. Qt-free, pure torch.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.options import RunOptions

Device = torch.device | str  # where a run puts its tensors
NEG_INF = float("-inf")


class AttentionMask:
    """One attention site's mask and what is known about it, so each run builds a mask once, not per layer.

    additive: [B or 1, 1, Tq, Tk], 0 where a query may look, -inf where it may not; None when a run that
    records nothing needs no tensor (it blocks nothing, or only the causal triangle).
    causal_only: what it blocks is exactly the causal triangle (the fused kernel can generate that itself).
    blocks_nothing: every entry is 0.  blocked_rows: some query has every key blocked.
    bias: a position bias [1, H, Tq, Tk] added to the scaled scores with the mask (engine/position_bias.py).
    """

    __slots__ = ("additive", "causal_only", "blocks_nothing", "blocked_rows", "bias", "_with_bias")

    def __init__(
        self,
        additive: torch.Tensor | None,
        causal_only: bool = False,
        blocks_nothing: bool = False,
        blocked_rows: bool | None = None,
        bias: torch.Tensor | None = None,
    ):
        self.additive = additive
        self.bias = bias
        self._with_bias: torch.Tensor | None = None
        self.causal_only = causal_only
        self.blocks_nothing = blocks_nothing
        if blocked_rows is None:
            blocked_rows = additive is not None and bool(torch.isinf(additive).all(dim=-1).any())
        self.blocked_rows = blocked_rows

    def dense(self, Tq: int, Tk: int, like: torch.Tensor) -> torch.Tensor:
        """The additive mask [B|1, 1, Tq, Tk], made when a run that records nothing left it out (it blocks
        nothing, or only the causal triangle): what a site computed step by step adds."""
        if self.additive is not None:
            return self.additive
        blocked = NEG_INF if self.causal_only else 0.0
        return torch.full((Tq, Tk), blocked, dtype=like.dtype, device=like.device).triu_(1)[None, None]

    def fused(self) -> torch.Tensor | None:
        """What the fused kernel adds to the scaled scores: the mask, plus the position bias when there is one
        ([B|1, H, Tq, Tk], made once and shared by the layers that use this mask)."""
        if self.bias is None or self.additive is None:
            return self.additive
        if self._with_bias is None:
            self._with_bias = self.additive + self.bias
        return self._with_bias


def additive_mask(
    site: str,
    Tq: int,
    Tk: int,
    key_pad: Tensor | None,
    opts: RunOptions,
    device: Device,
    dtype: torch.dtype | None = None,
    window: int = 0,
) -> Tensor:
    """build_mask from the RunOptions (and the model's sliding `window`: 0 for none).  -> [B or 1, 1, Tq, Tk]"""
    causal = opts.is_causal(site)
    cells = [(q, k) for q, k in opts.custom_cells(site) if q < Tq and k < Tk]
    padded = opts.padding_mask and key_pad is not None and bool(key_pad.any())
    banded = 0 < window < Tq  # sliding-window attention (Mistral): query i reads no key j with i - j >= W
    if not cells and not padded and not banded:  # nothing or the causal triangle: one or two kernels instead of four
        if causal:
            return torch.full((Tq, Tk), NEG_INF, dtype=dtype, device=device).triu_(1)[None, None]
        return torch.zeros(1, 1, Tq, Tk, dtype=dtype, device=device)
    blocked = torch.zeros(Tq, Tk, dtype=torch.bool, device=device)  # [Tq, Tk]
    if causal:
        blocked = torch.ones(Tq, Tk, dtype=torch.bool, device=device).triu(1)
    if cells:
        blocked[[q for q, _ in cells], [k for _, k in cells]] = True
    if banded:
        blocked |= torch.ones(Tq, Tk, dtype=torch.bool, device=device).tril_(-window)  # [Tq, Tk]: i - j >= W
    blocked = blocked[None, None]  # [1, 1, Tq, Tk]
    if padded:
        assert key_pad is not None
        blocked = blocked | key_pad[:, None, None, :]  # [B, 1, Tq, Tk]
    return torch.zeros(blocked.shape, dtype=dtype, device=device).masked_fill(blocked, NEG_INF)


class MaskBuilder:
    """Each distinct mask of a run, built once: layers whose sites block the same cells share one mask.

    Without recording, a mask that blocks nothing or only the causal triangle is never built at all: the fused
    kernel is told `is_causal` instead.
    """

    def __init__(
        self,
        options: RunOptions,
        record: bool,
        device: Device,
        dtype: torch.dtype | None,
        sliding_window: int = 0,
        window_pattern: int = 0,
    ):
        self.options = options
        self.sliding_window = sliding_window  # the model's window for its decoder self-attention (0: none)
        self.window_pattern = window_pattern  # every p-th layer attends globally (Gemma 2/3; 0: none does)
        self.record = record
        self.device = device
        self.dtype = dtype
        self._built: dict[tuple, AttentionMask] = {}

    def __call__(self, site: str, Tq: int, Tk: int, key_pad: Tensor | None) -> AttentionMask:
        """key_pad: bool [B, Tk] True at <pad> keys, or None when no key is padding or padding is off."""
        opts = self.options
        causal = opts.is_causal(site)
        window = self.window_of(site)
        window = window if window < Tq else 0  # a window no query reaches past blocks nothing
        cells = (
            frozenset((q, k) for q, k in opts.custom_cells(site) if q < Tq and k < Tk)
            if opts.custom_masks
            else frozenset()
        )
        key = (causal, cells, Tq, Tk, None if key_pad is None else id(key_pad), window)
        mask = self._built.get(key)
        if mask is not None:
            return mask
        plain = not cells and key_pad is None and not window  # blocks nothing, or exactly the causal triangle
        if plain and not self.record:
            mask = AttentionMask(None, causal_only=causal, blocks_nothing=not causal, blocked_rows=False)
        else:
            additive = additive_mask(site, Tq, Tk, key_pad, opts, self.device, self.dtype, window)  # [B|1,1,Tq,Tk]
            # the causal triangle alone always leaves key 0 open; cells and padding might close a whole row
            mask = AttentionMask(
                additive,
                causal_only=plain and causal,
                blocks_nothing=plain and not causal,
                blocked_rows=False if plain else None,
            )
        self._built[key] = mask
        return mask

    def window_of(self, site: str) -> int:
        """The sliding window W of a site: the model's, for decoder self-attention only; 0 (none) elsewhere."""
        return self.sliding_window if names.takes_window(site, self.window_pattern) else 0


def padded_keys(pad: Tensor | None, options: RunOptions) -> Tensor | None:
    """pad: bool [B, T] True at <pad>, or None -> the same when the padding mask applies and some key is
    <pad>, else None (one device sync per side per run, instead of one per layer)."""
    if pad is None or not options.padding_mask or not bool(pad.any()):
        return None
    return pad
