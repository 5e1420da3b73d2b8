"""QK-norm: an RMSNorm on the projected queries and keys, before rotary positions turn them.

Two kinds (ModelConfig.qk_norm):
- "head" (Qwen3, Gemma 3): over each trained head's d_k numbers, one γ of size d_k shared by every head;
- "whole" (OLMo-2): over all of a token's Q (H·d_k numbers) and all of its K (kv_dim numbers), one γ each.

The norm works on the projection [B, T, width] in groups of γ's size (d_k or the whole width), so a run that
re-splits the heads (the heads toggle) norms the same trained groups and then reads the result as its own
heads. Shapes: B batch, T tokens, H heads of this run, d_k = width / H.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.recorder import Recorder
from attnlab.engine.score_step import Mechanism

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions


def rms_groups(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """x [..., width] -> [..., width]: x / sqrt(mean(x²) + eps) · γ over consecutive groups of γ's size g
    (width / g groups; g = width: the whole vector). Computed as transformers' RMSNorm does."""
    g = weight.shape[0]
    grouped = x.unflatten(-1, (-1, g))  # [..., width / g, g]
    rstd = torch.rsqrt(grouped.pow(2).mean(-1, keepdim=True) + eps)  # [..., width / g, 1]
    return (weight * (grouped * rstd)).flatten(-2)  # [..., width]


class QKNorm(nn.Module):
    """The two RMSNorms of QK-norm: q_norm.weight [g_q], k_norm.weight [g_k] (g = d_k for "head", the whole
    Q / K width for "whole")."""

    def __init__(self, q_size: int, k_size: int, eps: float):
        super().__init__()
        self.q_norm = _Gamma(q_size)
        self.k_norm = _Gamma(k_size)
        self.eps = eps

    def forward(self, q_in: Tensor, k_in: Tensor, n_heads: int, rec: Recorder, prefix: str) -> tuple[Tensor, Tensor]:
        """q_in [B, Tq, H·d_k], k_in [B, Tk, kv_dim] (the projections) -> the same, normed. A recording run keeps
        both sides before and after, split into this run's heads ([B, H|H_kv, T, d_k], names.qk_norm_entries)."""
        q = rms_groups(q_in, self.q_norm.weight, self.eps)  # [B, Tq, H·d_k]
        k = rms_groups(k_in, self.k_norm.weight, self.eps)  # [B, Tk, kv_dim]
        if rec.enabled:
            dk = q_in.shape[-1] // n_heads
            rec.add(zip(names.qk_norm_entries(prefix), (_heads(t, dk) for t in (q_in, k_in, q, k)), strict=True))
        return q, k


class _Gamma(nn.Module):
    """One RMSNorm's γ (its state dict key is `weight`, as transformers names it)."""

    def __init__(self, size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))


def _heads(x: Tensor, dk: int) -> Tensor:
    """[B, T, n·d_k] -> [B, n, T, d_k]: a projection split into heads, as attention reads it."""
    return x.unflatten(-1, (-1, dk)).transpose(1, 2)


def make_qk_norm(kind: str, q_width: int, kv_dim: int, d_head: int, eps: float) -> QKNorm | None:
    """The QK-norm a ModelConfig asks for (None: "none"); q_width: H·d_k (d_model unless head_dim is set)."""
    if kind == "head":
        return QKNorm(d_head, d_head, eps)
    if kind == "whole":
        return QKNorm(q_width, kv_dim, eps)
    return None


class _QKNorms(Mechanism):
    """QK-norm's registration: the norms on the attention sub-layer, the stage before Q, K, V, and what a
    recorded site keeps: q_in, q_normed [H, Tq, dk] and k_in, k_normed [H_kv, Tk, dk]."""

    name = "qk_norm"

    def build(self, attention: nn.Module, config: ModelConfig) -> None:
        norm = make_qk_norm(
            config.qk_norm, config.attn_width, config.kv_heads * config.d_head, config.d_head, config.layer_norm_eps
        )
        if norm is not None:  # state dict: "….self_attn.qk_norm.q_norm.weight"
            attention.register_module("qk_norm", norm)

    def projects(self, config: ModelConfig) -> bool:
        return config.qk_norm != "none"

    def project(
        self, attention: nn.Module, q_in: Tensor, k_in: Tensor, n_heads: int, rec: Recorder, prefix: str
    ) -> tuple[Tensor, Tensor]:
        norm = attention.qk_norm
        assert isinstance(norm, QKNorm)
        return norm(q_in, k_in, n_heads, rec, prefix)  # the same shapes, normed

    def site_floats(self, config: ModelConfig, options: RunOptions, Tq: int, Tk: int) -> int:
        if config.qk_norm == "none" or not options.projections:
            return 0
        return 2 * (Tq * config.attn_width + Tk * config.kv_heads * config.d_head)


MECHANISM = _QKNorms()
