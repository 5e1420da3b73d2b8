"""Additive per-head position biases on the attention scores: B[h, i, j] is added to the scaled scores, before
the mask (masked = Q Kᵀ / √dₖ + B + mask). The model has no position table; the positions live in B.

- "alibi" (BLOOM, as transformers' modeling_bloom computes it): B[h, i, j] = m_h · j, with m_h the slope of
  head h (alibi_slopes). The ALiBi paper writes −m_h · (i − j); the two differ by m_h · i, the same number for
  every key of row i, which the softmax ignores: the weights are the same. attnlab records BLOOM's m_h · j.
  The slopes follow the run's head count (a re-split into h heads gets the slopes of h heads).

A site with a bias records two more entries (names.bias_entries): the bias [H, Tq, Tk] (one tensor shared by
every layer of a stack) and `biased` = scaled + bias, derived on read like the other maps (derived.py).
Shapes: B batch, H heads, Tq queries, Tk keys.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.derived import Derived

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Recorder

KINDS = ("none", "alibi")
WORDS = {"alibi": "ALiBi"}  # what the bias is called on pages and titles


def alibi_slopes(n_heads: int, device: torch.device | str = "cpu") -> Tensor:
    """The slopes m_h [H] of ALiBi, as BLOOM computes them: for the largest power of two P ≤ H, the geometric
    sequence 2^(−8/P · k), k = 1 … P; with H not a power of two, the remaining heads take every other slope of
    the sequence for 2P heads (2^(−4/P · k), k = 1, 3, 5, …)."""
    closest = 2 ** math.floor(math.log2(n_heads))
    base = torch.full((), 2 ** (-(2 ** -(math.log2(closest) - 3))), device=device, dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + closest, device=device, dtype=torch.int32))  # [P]
    if closest != n_heads:
        extra_base = torch.full((), 2 ** (-(2 ** -(math.log2(2 * closest) - 3))), device=device, dtype=torch.float32)
        remaining = min(closest, n_heads - closest)
        extra = torch.pow(extra_base, torch.arange(1, 1 + 2 * remaining, 2, device=device, dtype=torch.int32))
        slopes = torch.cat([slopes, extra])  # [H]
    return slopes


def alibi_bias(n_heads: int, Tq: int, Tk: int, device: torch.device | str, dtype: torch.dtype | None) -> Tensor:
    """B[h, i, j] = m_h · j -> [1, H, Tq, Tk] (every row the same: BLOOM's form, see the module text)."""
    slopes = alibi_slopes(n_heads, device)  # [H]
    row = slopes[:, None] * torch.arange(Tk, device=device)  # [H, Tk]
    return row[None, :, None, :].expand(1, n_heads, Tq, Tk).to(dtype or torch.float32).contiguous()


def takes_bias(config: ModelConfig, site: str) -> bool:
    """Whether a site's scores get the model's position bias: every self-attention site of a model with one."""
    return config.position_bias != "none" and names.split_site(site)[2] == "self"


def stack_bias(
    config: ModelConfig, n_heads: int, Tq: int, Tk: int, device: torch.device | str, dtype: torch.dtype | None
) -> Tensor:
    """The bias [1, H, Tq, Tk] of one stack's self-attention for a run with `n_heads` heads."""
    assert config.position_bias == "alibi", config.position_bias
    return alibi_bias(n_heads, Tq, Tk, device, dtype)


def add_bias(scaled: Tensor, bias: Tensor, in_place: bool) -> Tensor:
    """scaled [B, H, Tq, Tk] + bias [1, H, Tq, Tk] (into `scaled` when it may be overwritten)."""
    return scaled.add_(bias) if in_place else scaled + bias


def record_bias(rec: Recorder, prefix: str, bias: Tensor, biased: Tensor) -> None:
    """Record a site's bias [1, H, Tq, Tk] (stored: the same tensor for every layer of the stack) and
    biased = scaled + bias (derived on read; the value when eager)."""
    bias_name, biased_name = names.bias_entries(prefix)
    rule = Derived("biased", (names.site_entry(prefix, "scaled"), bias_name))
    rec.add(((bias_name, bias), (biased_name, rec.rule(biased, rule))))


def bias_floats(config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int) -> int:
    """Floats a recorded run stores for the position bias: one [H, T, T] per stack with self-attention."""
    if config.position_bias == "none" or not options.positional:
        return 0
    heads = options.effective_heads(config)
    lengths = [n for n, present in ((src_len, config.has_encoder), (tgt_len, config.has_decoder)) if present]
    return sum(heads * n * n for n in lengths)
