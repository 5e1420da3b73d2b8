"""Additive per-head position biases on the attention scores: B[h, i, j] is added to the scaled scores, before
the mask (masked = Q Kᵀ / √dₖ + B + mask). The model has no position table; the positions live in B.

- "alibi" (BLOOM, as transformers' modeling_bloom computes it): B[h, i, j] = m_h · j, with m_h the slope of
  head h (alibi_slopes). The ALiBi paper writes −m_h · (i − j); the two differ by m_h · i, the same number for
  every key of row i, which the softmax ignores: the weights are the same. attnlab records BLOOM's m_h · j.
  The slopes follow the run's head count (a re-split into h heads gets the slopes of h heads).
- "t5" (T5, MPNet: relative position buckets): B[h, i, j] = b_h[bucket(j − i)], a learned number per head and
  bucket (a table [buckets, H] per stack, `{stack}_rel_bias`, computed once and shared by every layer of the
  stack). Half the buckets count exact distances, the other half grow logarithmically up to max_distance
  (relative_bucket); the encoder's buckets tell keys before the query from keys after it (bidirectional), the
  decoder's see only keys before it. The table has one column per trained head: no re-split.

A site with a bias records two more entries (names.bias_entries): the bias [H, Tq, Tk] (one tensor shared by
every layer of a stack) and `biased` = scaled + bias, derived on read like the other maps (derived.py).
Shapes: B batch, H heads, Tq queries, Tk keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.derived import register
from attnlab.engine.score_step import Mechanism, RunKey, ScoreStep, SiteRun

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions

KINDS = ("none", "alibi", "t5")
WORDS = {"alibi": "ALiBi", "t5": "relative position bias"}  # what the bias is called on pages and titles


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


def relative_bucket(
    Tq: int, Tk: int, bidirectional: bool, num_buckets: int, max_distance: int, device: torch.device | str = "cpu"
) -> Tensor:
    """T5's bucket of each (query i, key j) [Tq, Tk] (transformers' T5Attention._relative_position_bucket on
    j − i): with `bidirectional` the upper half of the buckets holds keys after the query; then distances below
    half of the (remaining) buckets get one bucket each, longer ones logarithmic buckets up to max_distance."""
    relative = torch.arange(Tk, device=device)[None, :] - torch.arange(Tq, device=device)[:, None]  # j − i
    buckets = torch.zeros_like(relative)  # [Tq, Tk]
    if bidirectional:
        num_buckets //= 2
        buckets += (relative > 0).to(torch.long) * num_buckets
        distance = relative.abs()
    else:
        distance = -torch.clamp(relative, max=0)  # keys after the query share bucket 0 (the mask blocks them)
    max_exact = num_buckets // 2
    large = max_exact + (
        torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    large = torch.clamp(large, max=num_buckets - 1)
    return buckets + torch.where(distance < max_exact, distance, large)  # [Tq, Tk]


def add_bias_tables(model: nn.Module, config: ModelConfig) -> None:
    """The learned tables [buckets, H] of a "t5" bias, one per stack (`enc_rel_bias`, `dec_rel_bias`)."""
    if config.position_bias != "t5":
        return
    for stack, present in (("enc", config.has_encoder), ("dec", config.has_decoder)):
        if present:
            model.register_module(f"{stack}_rel_bias", nn.Embedding(config.relative_buckets, config.n_heads))


def takes_bias(config: ModelConfig, site: str) -> bool:
    """Whether a site's scores get the model's position bias: every self-attention site of a model with one."""
    return config.position_bias != "none" and names.split_site(site)[2] == "self"


def stack_bias(
    config: ModelConfig,
    tables: nn.Module,
    stack: str,
    n_heads: int,
    Tq: int,
    Tk: int,
    device: torch.device | str,
    dtype: torch.dtype | None,
) -> Tensor:
    """The bias [1, H, Tq, Tk] of one stack's self-attention for a run with `n_heads` heads (`config` says
    which bias; `tables`: the module holding the learned tables, add_bias_tables)."""
    if config.position_bias == "alibi":
        return alibi_bias(n_heads, Tq, Tk, device, dtype)
    table: nn.Embedding = getattr(tables, f"{stack}_rel_bias")  # [buckets, H]
    buckets = relative_bucket(Tq, Tk, stack == "enc", config.relative_buckets, config.relative_max_distance, device)
    return table(buckets).permute(2, 0, 1).unsqueeze(0).to(dtype or torch.float32)  # [1, H, Tq, Tk]


def _biased(scaled: Tensor, bias: Tensor) -> Tensor:
    """scaled [H, Tq, Tk] + the bias [H, Tq, Tk] (the rule of `biased`)."""
    return scaled + bias


register("biased", _biased, (True, True), map_rule=True)  # the bias has a map per head


@dataclass(frozen=True, eq=False)
class PositionBias(ScoreStep):
    """biased = scaled + bias [B, H, Tq, Tk] (into the map when it may be overwritten), where the site's mask
    carries a bias (bias_masks.py: self-attention, positions on); the bias [1, H, Tq, Tk] is stored (the same
    tensor for every layer of the stack), `biased` derived on read."""

    def active(self, key: RunKey) -> bool:
        return key.biased

    def apply(self, x: Tensor, run: SiteRun, in_place: bool) -> Tensor:
        assert run.bias is not None
        return x.add_(run.bias) if in_place else x + run.bias

    def inputs(self, site: str, below: str) -> tuple[str, ...]:
        return (below, names.bias_entries(site)[0])

    def stored(self, site: str, run: SiteRun) -> tuple[tuple[str, Tensor], ...]:
        assert run.bias is not None
        return ((names.bias_entries(site)[0], run.bias),)


class _PositionBiases(Mechanism):
    name = "position_bias"

    def map_steps(self, config: ModelConfig) -> tuple[ScoreStep, ...]:
        return (PositionBias("biased", "biased"),) if config.position_bias != "none" else ()

    def trace_floats(self, config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, lean: bool) -> int:
        return 0 if lean else bias_floats(config, options, src_len, tgt_len)  # lean: it lives in the layers

    def working_floats(self, config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int) -> int:
        return bias_floats(config, options, src_len, tgt_len)


MECHANISM = _PositionBiases()


def bias_floats(config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int) -> int:
    """Floats a recorded run stores for the position bias: one [H, T, T] per stack with self-attention."""
    if config.position_bias == "none" or not options.positional:
        return 0
    heads = options.effective_heads(config)
    lengths = [n for n, present in ((src_len, config.has_encoder), (tgt_len, config.has_decoder)) if present]
    return sum(heads * n * n for n in lengths)
