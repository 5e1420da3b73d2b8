"""The parts: attention as a function that exposes every step, multi-head attention, FFN, LayerNorm.

Shapes use B batch, H heads, Tq queries, Tk keys, d = d_model, dk = d/H.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.engine import names
from attnlab.engine.positional import apply_rotary
from attnlab.engine.trace import Recorder

NEG_INF = float("-inf")


def attention_steps(q, k, v, mask, scale: bool, rec: Recorder, prefix: str, *, blocked_rows: bool = True,
                    mask_is_zero: bool = False) -> torch.Tensor:
    """Scaled dot-product attention computed step by step, each step recorded under `prefix`.

    q [B, H, Tq, dk], k/v [B, H, Tk, dk], mask additive [B or 1, 1, Tq, Tk] (0 allowed, -inf blocked).
    Returns the context [B, H, Tq, dk]. A query whose every key is blocked gets all-zero weights.
    Hints from a caller that built the mask (they only save work): `blocked_rows=False` promises that no
    query has every key blocked; `mask_is_zero=True` promises that the mask blocks nothing.
    """
    scores = q @ k.transpose(-2, -1)  # [B, H, Tq, Tk]
    scaled = scores / math.sqrt(q.shape[-1]) if scale else scores  # [B, H, Tq, Tk]
    masked = scaled if mask_is_zero else scaled + mask  # [B, H, Tq, Tk]; adding zeros would only copy
    weights = torch.softmax(masked, dim=-1)  # [B, H, Tq, Tk]
    if blocked_rows:
        weights = weights.nan_to_num(0.0)  # rows with no allowed key: NaN -> 0
    context = weights @ v  # [B, H, Tq, dk]
    if rec.enabled:  # stored: the mask (one tensor shared by the layers that block the same cells); derived on
        # read (engine/derived.py): scores (from Q, K), scaled, masked, weights, context (from weights, V)
        entry = names.site_entry
        q_k = (entry(prefix, "q"), entry(prefix, "k"))
        if all(n in rec for n in q_k):  # Q and K are in the trace (MultiHeadAttention recorded them)
            rec.derived(entry(prefix, "scores"), scores, "scores", q_k)
        else:
            rec(entry(prefix, "scores"), scores)
        rec.derived(entry(prefix, "scaled"), scaled, "scaled", (entry(prefix, "scores"),), scale, q.shape[-1])
        rec(entry(prefix, "mask"), mask[0, 0], batched=False)
        rec.derived(entry(prefix, "masked"), masked, "masked", (entry(prefix, "scaled"), entry(prefix, "mask")))
        rec.derived(entry(prefix, "weights"), weights, "softmax_rows", (entry(prefix, "masked"),))
        if entry(prefix, "v") in rec:
            weights_v = (entry(prefix, "weights"), entry(prefix, "v"))
            rec.derived(entry(prefix, "context"), context, "weighted_sum", weights_v)
        else:
            rec(entry(prefix, "context"), context)
    return context


def fused_attention(q, k, v, mask, scale: bool, *, is_causal: bool = False,
                    blocked_rows: bool | None = None) -> torch.Tensor:
    """The same result through PyTorch's fused kernel (no intermediates). Shapes as attention_steps.

    `mask` may be None (nothing blocked, or only the causal triangle when `is_causal`). `blocked_rows`:
    whether some query has every key blocked (None: find out, at the cost of a device sync). Such rows go
    through attention_steps, which gives them zero weights; fused kernels are not guaranteed to."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=None if scale else 1.0)
    if blocked_rows is None:
        blocked_rows = bool(torch.isinf(mask).all(dim=-1).any())
    if blocked_rows:
        return attention_steps(q, k, v, mask, scale, Recorder(False), "")
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=None if scale else 1.0)


class AttentionMask:
    """One attention site's mask and what is known about it, so each run builds a mask once, not per layer.

    additive: [B or 1, 1, Tq, Tk], 0 where a query may look, -inf where it may not.
    causal_only: what it blocks is exactly the causal triangle (the fused kernel can generate that itself).
    blocks_nothing: every entry is 0.  blocked_rows: some query has every key blocked.
    """

    __slots__ = ("additive", "causal_only", "blocks_nothing", "blocked_rows")

    def __init__(self, additive: torch.Tensor, causal_only: bool = False, blocks_nothing: bool = False,
                 blocked_rows: bool | None = None):
        self.additive = additive
        self.causal_only = causal_only
        self.blocks_nothing = blocks_nothing
        if blocked_rows is None:
            blocked_rows = bool(torch.isinf(additive).all(dim=-1).any())
        self.blocked_rows = blocked_rows


class MultiHeadAttention(nn.Module):
    """Q = X W_Q, K = Y W_K, V = Y W_V split into heads; concat(heads) W_O. The head count is a run-time
    choice: the same d x d projections can be read as any number of heads that divides d."""

    def __init__(self, d_model: int, bias: bool = True):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask, n_heads: int, scale: bool, rotary, rec: Recorder, prefix: str):
        """x_q [B, Tq, d], x_kv [B, Tk, d], mask: additive [B or 1, 1, Tq, Tk] or an AttentionMask;
        rotary = (cos, sin) tables or None."""
        if not isinstance(mask, AttentionMask):
            mask = AttentionMask(mask)
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        dk = d // n_heads
        q = self.w_q(x_q).view(B, Tq, n_heads, dk).transpose(1, 2)  # [B, H, Tq, dk]
        k = self.w_k(x_kv).view(B, Tk, n_heads, dk).transpose(1, 2)  # [B, H, Tk, dk]
        v = self.w_v(x_kv).view(B, Tk, n_heads, dk).transpose(1, 2)  # [B, H, Tk, dk]
        if rotary is not None:
            cos, sin = rotary
            q = apply_rotary(q, cos[:Tq], sin[:Tq])
            k = apply_rotary(k, cos[:Tk], sin[:Tk])
        if rec.enabled:
            rec(names.site_entry(prefix, "q"), q)
            rec(names.site_entry(prefix, "k"), k)
            rec(names.site_entry(prefix, "v"), v)
            context = attention_steps(q, k, v, mask.additive, scale, rec, prefix,
                                      blocked_rows=mask.blocked_rows, mask_is_zero=mask.blocks_nothing)
        elif mask.blocks_nothing or mask.causal_only:
            context = fused_attention(q, k, v, None, scale, is_causal=mask.causal_only)
        else:
            context = fused_attention(q, k, v, mask.additive, scale, blocked_rows=mask.blocked_rows)
        concat = context.transpose(1, 2).reshape(B, Tq, d)  # [B, Tq, d]
        out = self.w_o(concat)  # [B, Tq, d]
        if rec.enabled:
            context_name = names.site_entry(prefix, "context")
            rec.derived(names.site_entry(prefix, "concat"), concat, "concat", (context_name,))
            rec(names.site_entry(prefix, "out"), out)
        return out


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2, applied to each position on its own."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool = True):
        super().__init__()
        self.lin1 = nn.Linear(d_model, d_ff, bias=bias)
        self.lin2 = nn.Linear(d_ff, d_model, bias=bias)
        self.activation = activation

    def forward(self, x, rec: Recorder, layer_name: str):
        """x [B, T, d] -> [B, T, d]; records under names.ffn_entry(layer_name, ...)."""
        pre = self.lin1(x)  # [B, T, d_ff]
        hidden = F.relu(pre) if self.activation == "relu" else F.gelu(pre)  # [B, T, d_ff]
        out = self.lin2(hidden)  # [B, T, d]
        if rec.enabled:
            rec(names.ffn_entry(layer_name, "pre"), pre)
            rec.derived(names.ffn_entry(layer_name, "hidden"), hidden, "activation",
                        (names.ffn_entry(layer_name, "pre"),), self.activation)
            rec(names.ffn_entry(layer_name, "out"), out)
        return out


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension (biased variance)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x, rec: Recorder, name: str):
        """x [B, T, d] -> [B, T, d]; records its input, statistics and output under `name` ('enc.0.norm1')."""
        if not rec.enabled:
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        # one fused pass gives the output [B, T, d] and the statistics it used: mean and 1/sqrt(var + eps),
        # each [B, T, 1]
        out, mean, rstd = torch.native_layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        var = rstd.pow(-2).sub_(self.eps).clamp_min_(0.0).squeeze(-1) if rec.eager else None  # [B, T], biased
        x_name = names.norm_entry(name, "in")
        rec(x_name, x)  # the statistics are derived from it on read, by the same kernel
        rec.derived(names.norm_entry(name, "mean"), mean.squeeze(-1), "norm_mean", (x_name,), self.eps)
        rec.derived(names.norm_entry(name, "var"), var, "norm_var", (x_name,), self.eps)
        rec(names.norm_entry(name, "out"), out)
        return out
