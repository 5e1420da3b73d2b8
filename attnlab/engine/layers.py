"""The parts: attention as a function that exposes every step, and multi-head attention (norms.py and ffn.py
hold LayerNorm/RMSNorm and the feed-forward networks).

Shapes use B batch, H heads, Tq queries, Tk keys, d = d_model, dk = d/H (head_dim when set: H·dk ≠ d).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.engine import disentangled, names, position_bias, relative_key
from attnlab.engine.attention_weights import AttentionWeights
from attnlab.engine.derived import Derived
from attnlab.engine.ffn import FeedForward  # re-exported: it lived here before
from attnlab.engine.masks import NEG_INF, AttentionMask  # re-exported: they lived here before
from attnlab.engine.norms import LayerNorm  # re-exported: it lived here before
from attnlab.engine.positional import apply_rotary
from attnlab.engine.qk_norm import QKNorm, make_qk_norm
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import RelativeInputs
from attnlab.engine.softcap import dense_mask, record_capped, soft_cap

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig

KVStep = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]  # (this step's K, V) -> (all of the cache's K, V)


def ablate_heads(context: Tensor, ablate: dict[int, str] | None) -> Tensor:
    """context [B, H, Tq, dk] with each ablated head's slice replaced: "zero" -> zeros, "mean" -> that head's
    context averaged over the query positions (every position gets the same vector). A new tensor when
    something is ablated; the same one otherwise."""
    if not ablate:
        return context
    context = context.clone()
    for head, mode in ablate.items():
        if mode == "zero":
            context[:, head] = 0.0
        else:  # "mean"
            context[:, head] = context[:, head].mean(dim=-2, keepdim=True)  # [B, 1, dk] over [B, Tq, dk]
    return context


def attention_steps(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor,
    scale: bool,
    rec: Recorder,
    prefix: str,
    *,
    blocked_rows: bool = True,
    mask_is_zero: bool = False,
    ablate: dict[int, str] | None = None,
    divisor: float = 1.0,
    softcap: float = 0.0,
    terms: Tensor | None = None,
    bias: Tensor | None = None,
) -> Tensor:
    """Scaled dot-product attention computed step by step, each step recorded under `prefix`.

    q [B, H, Tq, dk], k/v [B, H, Tk, dk], mask additive [B or 1, 1, Tq, Tk] (0 allowed, -inf blocked).
    Returns the context [B, H, Tq, dk]. A query whose every key is blocked gets all-zero weights.
    Hints from a caller that built the mask (they only save work): `blocked_rows=False` promises that no
    query has every key blocked; `mask_is_zero=True` promises that the mask blocks nothing. k/v have one head per Q
    head; under grouped-query attention the trace holds the shared K/V heads and the rules read each Q head's
    own (derived.py). `ablate` {head: "zero"|"mean"}: those heads' context is replaced
    (ablate_heads); the recorded `context` is then the ablated one, stored (weights @ V would not give it).
    `divisor`: the scores are divided by √dk · divisor when scaling (GPT-2's scale_attn_by_inverse_layer_idx:
    layer l's divisor is l + 1). `softcap` > 0: the scaled scores are capped, cap · tanh(x / cap), before the
    mask (Gemma 2; engine/softcap.py), recorded as "capped". `terms` [B, H, Tq, Tk]: terms added to Q Kᵀ before
    the scaling (DeBERTa's position terms, disentangled.py); the scores are then stored, not derived from Q and K.
    `bias` [1, H, Tq, Tk]: a position bias added after scaling, before the mask (ALiBi, T5:
    engine/position_bias.py), recorded with `biased` = scaled + bias.
    """
    n = names.site_entries(prefix)
    keeps_steps = rec.enabled and rec.eager  # an eager recorder keeps scaled and masked as values
    scores_derived = rec.enabled and n.q in rec and n.k in rec  # Q, K in the trace (a shared K head serves its Qs)
    scores = q @ k.transpose(-2, -1)  # [B, H, Tq, Tk]
    if terms is not None:  # DeBERTa: Q Kᵀ + c2p + p2c
        scores, scores_derived = scores.add_(terms), False
    # a step kept by nobody may be overwritten by the next (the same numbers, one buffer less to fill)
    scratch = not keeps_steps and (scores_derived or not rec.enabled)
    if scale:
        denominator = math.sqrt(q.shape[-1]) * divisor
        scaled = scores.div_(denominator) if scratch else scores / denominator
        scratch = not keeps_steps  # a new tensor, derived on read when recorded at all
    else:
        scaled = scores  # [B, H, Tq, Tk]
    biased = scaled if bias is None else position_bias.add_bias(scaled, bias, scratch)  # [B, H, Tq, Tk]
    scratch = scratch or (bias is not None and not keeps_steps)
    capped = soft_cap(biased, softcap) if softcap else biased  # [B, H, Tq, Tk]: a new tensor when capped
    if mask_is_zero:  # adding zeros would only copy
        masked = capped
    else:
        masked = capped.add_(mask) if scratch or (softcap and not keeps_steps) else capped + mask  # [B, H, Tq, Tk]
    weights = torch.softmax(masked, dim=-1)  # [B, H, Tq, Tk]
    if blocked_rows:
        weights = weights.nan_to_num_(0.0)  # rows with no allowed key: NaN -> 0 (the softmax output is no entry)
    context = ablate_heads(weights @ v, ablate)  # [B, H, Tq, dk]
    if rec.enabled:
        context_derived = not ablate and n.v in rec
        if bias is not None:
            position_bias.record_bias(rec, prefix, bias, biased)
        steps = (scores, scaled, masked, weights, context)
        scaling = (scale, q.shape[-1], divisor, softcap, bias is not None)
        record_steps(rec, n, steps, mask, scaling, scores_derived, context_derived)
        if softcap:
            record_capped(rec, prefix, capped, softcap)
    return context


@lru_cache(maxsize=4096)
def site_rules(
    n: names.SiteNames,
    scale: bool,
    d_head: int,
    divisor: float = 1.0,
    softcap: float = 0.0,
    biased: bool = False,
) -> tuple[Derived, ...]:
    """How a site's scores, scaled, masked, weights, context and concat are derived on read (engine/derived.py),
    built once per site and setting: `softcap`, the mask is added to the capped scores (engine/softcap.py);
    `biased`, to scaled + the position bias (engine/position_bias.py)."""
    site = names.site_of(n.scaled) or ""
    before_mask = names.capped(site) if softcap else names.bias_entries(site)[1] if biased else n.scaled
    return (
        Derived("scores", (n.q, n.k)),
        Derived("scaled", (n.scores,), (scale, d_head, divisor)),
        Derived("masked", (before_mask, n.mask)),
        Derived("softmax_rows", (n.masked,)),
        Derived("weighted_sum", (n.weights, n.v)),
        Derived("concat", (n.context,)),
    )


def record_steps(
    rec: Recorder,
    n: names.SiteNames,
    steps: tuple[Tensor, Tensor, Tensor, Tensor, Tensor],
    mask: Tensor,
    scaling: tuple[bool, int, float, float, bool],
    scores_derived: bool,
    context_derived: bool,
) -> None:
    """Record scores … context of one site in one go: the mask [B|1, 1, Tq, Tk] stored (one tensor shared by
    the layers that block the same cells), the rest derived on read where the trace holds their inputs
    (scores needs Q and K head for head, context needs V and no ablation), else stored. `steps`: the values
    of scores, scaled, masked, weights, context; when lazy, the first three may have been overwritten.
    `scaling`: (scale on, d_head, divisor, softcap, position bias added) as attention_steps had them."""
    scores, scaled, masked, weights, context = steps
    by_scores, by_scaled, by_masked, by_weights, by_context, _ = site_rules(n, *scaling)
    rec.add(
        (
            (n.scores, rec.rule(scores, by_scores) if scores_derived else scores),
            (n.scaled, rec.rule(scaled, by_scaled)),
            (n.mask, mask[0]),
            (n.masked, rec.rule(masked, by_masked)),
            (n.weights, rec.rule(weights, by_weights)),
            (n.context, rec.rule(context, by_context) if context_derived else context),
        )
    )


def fused_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    scale: bool,
    *,
    is_causal: bool = False,
    blocked_rows: bool | None = None,
    divisor: float = 1.0,
) -> Tensor:
    """The same result through PyTorch's fused kernel (no intermediates). Shapes as attention_steps.

    `mask` may be None (nothing blocked, or only the causal triangle when `is_causal`). `blocked_rows`:
    whether some query has every key blocked (None: find out, at the cost of a device sync). Such rows go
    through attention_steps, which gives them zero weights; fused kernels are not guaranteed to. `divisor` as
    attention_steps."""
    factor = (None if divisor == 1.0 else 1.0 / (math.sqrt(q.shape[-1]) * divisor)) if scale else 1.0
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=factor)
    if blocked_rows is None:
        blocked_rows = bool(torch.isinf(mask).all(dim=-1).any())
    if blocked_rows:
        return attention_steps(q, k, v, mask, scale, Recorder(False), "", divisor=divisor)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=factor)


class MultiHeadAttention(AttentionWeights):
    """Q = X W_Q, K = Y W_K, V = Y W_V split into heads; concat(heads) W_O. The head count is a run-time
    choice: the same d x d projections can be read as any number of heads that divides d.

    With `projections=False` (plain dot-product attention, the teaching texts' first example) Q = X, K = V = Y
    split into the same head slices, and the concat is the output: no W_Q, W_K, W_V, W_O, no biases. Rotary
    positions still turn Q and K (they are part of the positions, not of the projections).

    Grouped-query attention: W_K and W_V have fewer outputs (kv_dim = H_kv * dk); each K/V head serves
    H / H_kv consecutive Q heads (Q head h reads K/V head h // (H / H_kv)). The tables DeBERTa's and BERT's
    relative positions add are declared on AttentionWeights (attention_weights.py)."""

    def __init__(
        self,
        d_model: int,
        bias: bool = True,
        *,
        kv_dim: int | None = None,
        out_bias: bool | None = None,
        rotary_layout: str = "interleaved",
        score_divisor: float = 1.0,
        width: int | None = None,
    ):
        super().__init__()
        kv_dim = kv_dim or d_model
        width = width or d_model  # w-headdim: H·d_k, the width of Q and of the concat (d_model unless head_dim)
        self.w_q = nn.Linear(d_model, width, bias=bias)
        self.w_k = nn.Linear(d_model, kv_dim, bias=bias)
        self.w_v = nn.Linear(d_model, kv_dim, bias=bias)
        self.w_o = nn.Linear(width, d_model, bias=bias if out_bias is None else out_bias)
        self.rotary_layout = rotary_layout
        self.score_divisor = score_divisor  # scores / (√dk · this) when scaling (GPT-2's inverse layer index)
        self.qk_norm: QKNorm | None = None  # QK-norm on the projections (engine/qk_norm.py), set by make_attention
        self.softcap = 0.0  # Gemma 2's attention soft-capping (engine/softcap.py; 0: none), set by make_attention
        self.kv_step: KVStep | None = None  # generation with a KV cache (engine/kv_cache.py); None: a whole run

    def forward(
        self,
        x_q: Tensor,
        x_kv: Tensor,
        mask: Tensor | AttentionMask,
        n_heads: int,
        scale: bool,
        rotary: tuple[Tensor, Tensor] | None,
        rec: Recorder,
        prefix: str,
        *,
        ablate: dict[int, str] | None = None,
        projections: bool = True,
        relative: RelativeInputs | None = None,
    ) -> Tensor:
        """x_q [B, Tq, d], x_kv [B, Tk, d], mask: additive [B or 1, 1, Tq, Tk] or an AttentionMask;
        rotary = (cos, sin) tables or None; ablate = {head: "zero"|"mean"} (see ablate_heads); relative: the
        run's relative embeddings, read by a sub-layer with DeBERTa's position terms (disentangled.py)."""
        if not isinstance(mask, AttentionMask):
            mask = AttentionMask(mask)
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        width = self.w_q.out_features if projections else d  # H·d_k (w-headdim; without projections d)
        dk = width // n_heads
        if projections:
            n_kv = self.w_k.out_features // dk  # K/V heads of this split (= n_heads without GQA)
            q_in, k_in, v_in = self.w_q(x_q), self.w_k(x_kv), self.w_v(x_kv)  # [B, Tq, H·dk], 2 x [B, Tk, H_kv·dk]
            if self.qk_norm is not None:
                q_in, k_in = self.qk_norm(q_in, k_in, n_heads, rec, prefix)  # the same shapes, normed
        else:  # plain dot-product attention: x itself, split into the heads' slices
            n_kv, q_in, k_in, v_in = n_heads, x_q, x_kv, x_kv
        q = q_in.reshape(B, Tq, n_heads, dk).transpose(1, 2)  # [B, H, Tq, dk]
        k = k_in.reshape(B, Tk, n_kv, dk).transpose(1, 2)  # [B, H_kv, Tk, dk]
        v = v_in.reshape(B, Tk, n_kv, dk).transpose(1, 2)  # [B, H_kv, Tk, dk]
        if rotary is not None:
            cos, sin = rotary
            q = apply_rotary(q, cos[:Tq], sin[:Tq], self.rotary_layout)
            k = apply_rotary(k, cos[:Tk], sin[:Tk], self.rotary_layout)
        if self.kv_step is not None:  # the cached K/V rows and this step's: 2 x [B, H_kv, t + 1, dk]
            k, v = self.kv_step(k, v)
        if rec.enabled:
            n = names.site_entries(prefix)
            rec.add(((n.q, q), (n.k, k), (n.v, v)))
        terms = None  # DeBERTa's position terms [B, H, Tq, Tk]
        if self.rel_terms:  # None when the positions are off (only c2c is recorded then)
            terms = disentangled.position_terms(self, q, k, relative, projections, rec, prefix)
        if self.rel_key_terms:  # BERT's relative_key(_query): None when the positions are off
            terms = relative_key.key_terms(self, q, k, relative, rec, prefix)
        context = attend(
            q, k, v, mask, scale, rec, prefix, ablate, self.score_divisor, self.softcap, terms
        )  # [B, H, Tq, dk]
        concat = context.transpose(1, 2).reshape(B, Tq, width)  # [B, Tq, H·dk]
        out = self.w_o(concat) if projections else concat  # [B, Tq, d]
        if rec.enabled:
            by_concat = site_rules(n, scale, dk, self.score_divisor)[-1]
            rec.add(((n.concat, rec.rule(concat, by_concat)), (n.out, out)))
        return out


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: AttentionMask,
    scale: bool,
    rec: Recorder,
    prefix: str,
    ablate: dict[int, str] | None,
    divisor: float = 1.0,
    softcap: float = 0.0,
    terms: Tensor | None = None,
) -> Tensor:
    """q [B, H, Tq, dk], k/v [B, H_kv, Tk, dk] -> context [B, H, Tq, dk]: step by step when recording, else
    through the fused kernel (told `is_causal` instead of given a mask where it can be), except with `softcap`,
    which no fused kernel does: step by step then, recording nothing. `terms` [B, H, Tq, Tk] (DeBERTa's position
    terms): a recording run takes attention_steps (its scores are stored: budget.py counts them), one that
    records nothing folds the terms into the kernel's mask. A position bias (ALiBi, T5) rides on `mask.bias`."""
    n_heads, n_kv = q.shape[1], k.shape[1]
    if n_kv != n_heads:  # each K/V head serves n_heads / n_kv consecutive Q heads
        k = k.repeat_interleave(n_heads // n_kv, dim=1)  # [B, H, Tk, dk]
        v = v.repeat_interleave(n_heads // n_kv, dim=1)  # [B, H, Tk, dk]
    if terms is not None and not rec.enabled:
        additive = mask.additive
        if additive is None:  # nothing blocked, or only the causal triangle
            additive = torch.zeros(q.shape[-2], k.shape[-2], dtype=q.dtype, device=q.device)  # [Tq, Tk]
            additive = additive.fill_(NEG_INF).triu_(1) if mask.causal_only else additive
        folded = disentangled.folded_mask(terms, additive, scale, q.shape[-1], divisor)  # [B, H, Tq, Tk]
        mask = AttentionMask(folded, blocked_rows=mask.blocked_rows)
    if rec.enabled:
        assert mask.additive is not None, "a recording run builds every mask (MaskBuilder)"
        if not rec.eager and not ablate and terms is None and lazy_steps(rec, prefix):
            return recorded_fused_attention(q, k, v, mask, scale, rec, prefix, divisor, softcap)
        return attention_steps(
            q,
            k,
            v,
            mask.additive,
            scale,
            rec,
            prefix,
            blocked_rows=mask.blocked_rows,
            mask_is_zero=mask.blocks_nothing,
            ablate=ablate,
            divisor=divisor,
            softcap=softcap,
            terms=terms,
            bias=mask.bias,
        )
    if softcap:  # no fused kernel soft-caps
        additive = dense_mask(mask, q.shape[-2], k.shape[-2], q)  # [B|1, 1, Tq, Tk]
        steps = attention_steps(
            q, k, v, additive, scale, rec, "", blocked_rows=mask.blocked_rows, divisor=divisor, softcap=softcap
        )
        return ablate_heads(steps, ablate)
    if mask.blocks_nothing or mask.causal_only:
        fused = fused_attention(q, k, v, None, scale, is_causal=mask.causal_only, divisor=divisor)
        return ablate_heads(fused, ablate)
    fused = fused_attention(q, k, v, mask.fused(), scale, blocked_rows=mask.blocked_rows, divisor=divisor)
    return ablate_heads(fused, ablate)


def lazy_steps(rec: Recorder, prefix: str) -> bool:
    """Whether the trace holds what derives every step of this site on read (Q, K, V): then the recording
    forward needs no n×n map (recorded_fused_attention)."""
    n = names.site_entries(prefix)
    return n.q in rec and n.k in rec and n.v in rec


def recorded_fused_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: AttentionMask,
    scale: bool,
    rec: Recorder,
    prefix: str,
    divisor: float,
    softcap: float = 0.0,
) -> Tensor:
    """A recording run's attention in O(n·d) memory: the context [B, H, Tq, dk] from the fused kernel (no
    [H, Tq, Tk] map of all heads at once), the mask and context stored, scores … weights recorded as rules
    that redo attention_steps' arithmetic on read, one head or one block of rows at a time
    (derived_blocks.py). q, k, v [B, H, Tq|Tk, dk] (a shared K/V head repeated for each of its Q heads; the
    trace holds the K/V as projected). A query whose every key is blocked gets a zero context, as in
    attention_steps."""
    additive, biased = mask.additive, mask.bias is not None
    assert additive is not None
    if softcap:  # no fused kernel soft-caps: the context step by step, nothing kept (engine/softcap.py)
        context = attention_steps(q, k, v, additive, scale, Recorder(False), "", divisor=divisor, softcap=softcap)
    elif mask.blocks_nothing or mask.causal_only:
        context = fused_attention(q, k, v, None, scale, is_causal=mask.causal_only, divisor=divisor)
    else:
        context = fused_attention(q, k, v, mask.fused(), scale, blocked_rows=False, divisor=divisor)
        if mask.blocked_rows:  # kernels need not give zeros (NaN, or a uniform average) for such rows
            blocked = torch.isinf(additive).all(dim=-1, keepdim=True)  # [B|1, 1, Tq, 1]
            context = context.masked_fill(blocked, 0.0)  # [B, H, Tq, dk]
    n = names.site_entries(prefix)
    by_scores, by_scaled, by_masked, by_weights, _, _ = site_rules(n, scale, q.shape[-1], divisor, softcap, biased)
    if mask.bias is not None:  # the bias stored, scaled + bias derived (the value is never made here)
        position_bias.record_bias(rec, prefix, mask.bias, torch.empty(0))
    rec.add(
        (
            (n.scores, by_scores),
            (n.scaled, by_scaled),
            (n.mask, additive[0]),
            (n.masked, by_masked),
            (n.weights, by_weights),
            (n.context, context),
        )
    )
    if softcap:
        record_capped(rec, prefix, None, softcap)  # derived on read
    return context


def make_attention(cfg: ModelConfig, layer_index: int = 0) -> MultiHeadAttention:
    """The attention sub-layer a ModelConfig asks for (its K/V width, biases and rotary layout) in the layer
    `layer_index` of its stack (GPT-2's scale_attn_by_inverse_layer_idx divides that layer's scores by index + 1)."""
    attention = MultiHeadAttention(
        cfg.d_model,
        cfg.has_bias("qkv"),
        kv_dim=cfg.kv_heads * cfg.d_head,
        width=cfg.attn_width,
        out_bias=cfg.has_bias("attn_out"),
        rotary_layout=cfg.rotary_layout,
        score_divisor=(float(layer_index + 1) if cfg.attn_scale_inverse_layer else 1.0)
        * cfg.score_scale_factor
        * math.sqrt(disentangled.scale_factor(cfg)),  # DeBERTa: √(dk · (1 + terms)) = √dk · √(1 + terms)
    )
    attention.softcap = cfg.attn_softcap
    attention.qk_norm = make_qk_norm(
        cfg.qk_norm, cfg.attn_width, cfg.kv_heads * cfg.d_head, cfg.d_head, cfg.layer_norm_eps
    )
    disentangled.add_position_projections(attention, cfg)
    relative_key.add_distance_table(attention, cfg)
    return attention


__all__ = [
    "NEG_INF",
    "AttentionMask",
    "FeedForward",
    "LayerNorm",
    "MultiHeadAttention",
    "ablate_heads",
    "attend",
    "attention_steps",
    "fused_attention",
    "make_attention",
]
