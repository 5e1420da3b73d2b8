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

from attnlab.engine import names, row_stable, score_steps
from attnlab.engine.attention_weights import AttentionWeights
from attnlab.engine.derived import Derived
from attnlab.engine.ffn import FeedForward  # re-exported: it lived here before
from attnlab.engine.masks import NEG_INF, AttentionMask  # re-exported: they lived here before
from attnlab.engine.norms import LayerNorm  # re-exported: it lived here before
from attnlab.engine.positional import apply_rotary
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import RelativeInputs
from attnlab.engine.score_step import Mechanism, RunKey, SiteRun

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
    steps: score_steps.SiteSteps = score_steps.PLAIN,
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
    `steps`: the site's score steps (score_steps.site_steps: ÷ √dₖ · divisor, each mechanism's step, the
    mask), applied in order to Q Kᵀ, each recorded under its entry. `terms` [B, H, Tq, Tk]: terms added to
    Q Kᵀ before the steps (DeBERTa's position terms, disentangled.py; BERT's relative_key); the scores are then
    stored, not derived from Q and K. `bias` [1, H, Tq, Tk]: the position bias the mask carries (ALiBi, T5:
    engine/position_bias.py), for its step.
    """
    n = names.site_entries(prefix)
    keeps_steps = rec.enabled and rec.eager  # an eager recorder keeps every step as a value
    scores_derived = rec.enabled and n.q in rec and n.k in rec  # Q, K in the trace (a shared K head serves its Qs)
    scores = row_stable.scores(q, k)  # [B, H, Tq, Tk], the same bits for a row whatever keys follow
    if terms is not None:  # DeBERTa: Q Kᵀ + c2p + p2c
        scores, scores_derived = scores.add_(terms), False
    run = SiteRun(RunKey(scale, q.shape[-1], bias is not None), mask, mask_is_zero, bias)
    # a step kept by nobody may be overwritten by the next (the same numbers, one buffer less to fill)
    scratch = not keeps_steps and (scores_derived or not rec.enabled)
    plan = score_steps.site_plan(steps, prefix, run.key)  # the active steps, their names and rules
    x, values = scores, []
    for step in plan.steps:
        y = step.apply(x, run, scratch)  # [B, H, Tq, Tk]
        scratch = scratch or (y is not x and not keeps_steps)  # a new map: derived on read when recorded at all
        values.append(y)
        x = y
    weights = row_stable.softmax(x)  # [B, H, Tq, Tk]
    if blocked_rows:
        weights = weights.nan_to_num_(0.0)  # rows with no allowed key: NaN -> 0 (the softmax output is no entry)
    context = ablate_heads(row_stable.weighted_sum(weights, v), ablate)  # [B, H, Tq, dk]
    if rec.enabled:
        context_derived = not ablate and n.v in rec
        record_steps(rec, prefix, plan, run, (scores, *values, weights, context), scores_derived, context_derived)
    return context


def record_steps(
    rec: Recorder,
    prefix: str,
    plan: score_steps.SitePlan,
    run: SiteRun,
    values: tuple[Tensor, ...],
    scores_derived: bool,
    context_derived: bool,
) -> None:
    """Record scores … context of one site in one go: what each step stores (the mask [Tq, Tk], one tensor
    shared by the layers that block the same cells; a position bias), the rest derived on read where the trace
    holds their inputs (scores needs Q and K head for head, context needs V and no ablation), else stored.
    `values`: scores, each active step's map, the weights and the context [B, H, ...] (when lazy, a map may
    have been overwritten by the next). `plan`: the site's score_steps.site_plan for this run."""
    scores, *maps, weights, context = values
    recorded = [(plan.scores[0], rec.rule(scores, plan.scores[1]) if scores_derived else scores)]
    for step, (name, rule), value in zip(plan.steps, plan.maps, maps, strict=True):
        recorded += step.stored(prefix, run)
        recorded.append((name, rec.rule(value, rule)))
    recorded.append((plan.weights[0], rec.rule(weights, plan.weights[1])))
    recorded.append((plan.context[0], rec.rule(context, plan.context[1]) if context_derived else context))
    rec.add(recorded)


def record_rules(rec: Recorder, prefix: str, plan: score_steps.SitePlan, run: SiteRun, context: Tensor) -> None:
    """Record a site whose maps were never made: what each step stores, each map's rule, the context stored."""
    recorded: list[tuple[str, Tensor | Derived]] = [plan.scores]
    for step, name_rule in zip(plan.steps, plan.maps, strict=True):
        recorded += step.stored(prefix, run)
        recorded.append(name_rule)
    recorded += (plan.weights, (plan.context[0], context))
    rec.add(recorded)


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
    """The same result through PyTorch's fused kernel (no intermediates) for a site whose steps the kernel
    does (score_steps.fusable): the scaling and the mask, a position bias folded into it. Shapes as
    attention_steps.

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
        return attention_steps(q, k, v, mask, scale, Recorder(False), "", steps=score_steps.plain(divisor))
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

    # the mechanisms that change the projected Q and K, and those that add terms to Q Kᵀ (score_steps), set by
    # make_attention
    projecting_mechanisms: tuple[Mechanism, ...] = ()
    term_mechanisms: tuple[Mechanism, ...] = ()

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
        # the score steps: scores / (√dk · score_divisor) when scaling (GPT-2's inverse layer index), each
        # mechanism's step, the mask (score_steps.site_steps, set by make_attention)
        self.steps = score_steps.plain(score_divisor)
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
        patch: Callable[[str, Tensor], Tensor] | None = None,
    ) -> Tensor:
        """x_q [B, Tq, d], x_kv [B, Tk, d], mask: additive [B or 1, 1, Tq, Tk] or an AttentionMask;
        rotary = (cos, sin) tables or None; ablate = {head: "zero"|"mean"} (see ablate_heads); relative: the
        run's relative embeddings, read by a sub-layer with DeBERTa's position terms (disentangled.py);
        patch(entry, value): the run's activation patches (engine/patching.py) applied to Q, K, V (as rotated),
        the context and the output, None when no patch reaches this site."""
        if not isinstance(mask, AttentionMask):
            mask = AttentionMask(mask)
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        width = self.w_q.out_features if projections else d  # H·d_k (w-headdim; without projections d)
        dk = width // n_heads
        if projections:
            n_kv = self.w_k.out_features // dk  # K/V heads of this split (= n_heads without GQA)
            q_in, k_in, v_in = self.w_q(x_q), self.w_k(x_kv), self.w_v(x_kv)  # [B, Tq, H·dk], 2 x [B, Tk, H_kv·dk]
            for mechanism in self.projecting_mechanisms:  # QK-norm (engine/qk_norm.py)
                q_in, k_in = mechanism.project(self, q_in, k_in, n_heads, rec, prefix)  # the same shapes
        else:  # plain dot-product attention: x itself, split into the heads' slices
            n_kv, q_in, k_in, v_in = n_heads, x_q, x_kv, x_kv
        q = q_in.reshape(B, Tq, n_heads, dk).transpose(1, 2)  # [B, H, Tq, dk]
        k = k_in.reshape(B, Tk, n_kv, dk).transpose(1, 2)  # [B, H_kv, Tk, dk]
        v = v_in.reshape(B, Tk, n_kv, dk).transpose(1, 2)  # [B, H_kv, Tk, dk]
        if rotary is not None:
            cos, sin = rotary
            q = apply_rotary(q, cos[:Tq], sin[:Tq], self.rotary_layout)
            k = apply_rotary(k, cos[:Tk], sin[:Tk], self.rotary_layout)
        n = names.site_entries(prefix)
        if patch is not None:
            q, k, v = patch(n.q, q), patch(n.k, k), patch(n.v, v)
        if self.kv_step is not None:  # the cached K/V rows and this step's: 2 x [B, H_kv, t + 1, dk]
            k, v = self.kv_step(k, v)
        if rec.enabled:
            rec.add(((n.q, q), (n.k, k), (n.v, v)))
        terms = None  # terms added to Q Kᵀ [B, H, Tq, Tk] (DeBERTa's, BERT relative_key's): None with positions off
        for mechanism in self.term_mechanisms:
            added = mechanism.terms(self, q, k, relative, projections, rec, prefix)
            terms = added if terms is None or added is None else terms + added
        context = attend(q, k, v, mask, scale, rec, prefix, ablate, self.steps, terms)  # [B, H, Tq, dk]
        if patch is not None:  # the patched context replaces the recorded one
            context = patch(n.context, context)
        concat = context.transpose(1, 2).reshape(B, Tq, width)  # [B, Tq, H·dk]
        out = self.w_o(concat) if projections else concat  # [B, Tq, d]
        if patch is not None:
            out = patch(n.out, out)
        if rec.enabled:
            rec.add(((n.concat, rec.rule(concat, concat_rule(n.context))), (n.out, out)))
        return out


@lru_cache(maxsize=4096)
def concat_rule(context: str) -> Derived:
    """How a site's concat [Tq, H·dk] is derived from its context on read."""
    return Derived("concat", (context,))


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: AttentionMask,
    scale: bool,
    rec: Recorder,
    prefix: str,
    ablate: dict[int, str] | None,
    steps: score_steps.SiteSteps = score_steps.PLAIN,
    terms: Tensor | None = None,
) -> Tensor:
    """q [B, H, Tq, dk], k/v [B, H_kv, Tk, dk] -> context [B, H, Tq, dk]: step by step when recording, else
    through the fused kernel (told `is_causal` instead of given a mask where it can be), except where a step
    no fused kernel does (a soft-cap: score_steps.fusable): step by step then, recording nothing. `terms`
    [B, H, Tq, Tk] (DeBERTa's position terms): a recording run takes attention_steps (its scores are stored:
    budget.py counts them), one that records nothing folds the terms into the kernel's mask. A position bias
    (ALiBi, T5) rides on `mask.bias`."""
    n_heads, n_kv = q.shape[1], k.shape[1]
    if n_kv != n_heads:  # each K/V head serves n_heads / n_kv consecutive Q heads
        k = k.repeat_interleave(n_heads // n_kv, dim=1)  # [B, H, Tk, dk]
        v = v.repeat_interleave(n_heads // n_kv, dim=1)  # [B, H, Tk, dk]
    if terms is not None and not rec.enabled:
        divisor = score_steps.scale_of(steps).divisor
        additive = mask.dense(q.shape[-2], k.shape[-2], q)[0, 0] if mask.additive is None else mask.additive
        folded = score_steps.folded_mask(terms, additive, scale, q.shape[-1], divisor)  # [B, H, Tq, Tk]
        mask = AttentionMask(folded, blocked_rows=mask.blocked_rows)
    if rec.enabled:
        assert mask.additive is not None, "a recording run builds every mask (MaskBuilder)"
        if not rec.eager and not ablate and terms is None and lazy_steps(rec, prefix):
            return recorded_fused_attention(q, k, v, mask, scale, rec, prefix, steps)
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
            steps=steps,
            terms=terms,
            bias=mask.bias,
        )
    if rec.stable and row_stable.worth_it(q, k):  # nothing recorded, a recording's numbers (a patching map)
        context = stable_context(q, k, v, mask.dense(q.shape[-2], k.shape[-2], q), mask.bias, scale, steps)
        return ablate_heads(context, ablate)
    if not score_steps.fusable(steps):  # step by step, recording nothing
        additive = mask.dense(q.shape[-2], k.shape[-2], q)  # [B|1, 1, Tq, Tk]
        context = attention_steps(
            q, k, v, additive, scale, rec, "", blocked_rows=mask.blocked_rows, steps=steps, bias=mask.bias
        )
        return ablate_heads(context, ablate)
    divisor = score_steps.scale_of(steps).divisor
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
    steps: score_steps.SiteSteps = score_steps.PLAIN,
) -> Tensor:
    """A recording run's attention in O(n·d) memory: the context [B, H, Tq, dk] on the CPU up to
    row_stable.STABLE_KEYS keys step by step, one head and one block of rows at a time (row_stable.by_blocks;
    no [H, Tq, Tk] map of all heads at once), each row's bits the same whatever rows and keys follow it
    (engine/row_stable.py); else from the fused kernel (to float32 rounding of those); what the steps store (the mask, a
    position bias) and the context stored, scores … weights recorded as rules that redo attention_steps'
    arithmetic on read, one head or one block of rows at a time (derived_blocks.py). q, k, v [B, H, Tq|Tk,
    dk] (a shared K/V head repeated for each of its Q heads; the trace holds the K/V as projected). A query
    whose every key is blocked gets a zero context, as in attention_steps."""
    additive = mask.additive
    assert additive is not None
    if row_stable.worth_it(q, k):  # a row's bits whatever keys follow it (a generation's steps)
        context = stable_context(q, k, v, additive, mask.bias, scale, steps)  # [B, H, Tq, dk]
    else:  # the fused kernel: long inputs and GPUs (the row-stable arithmetic is 8x slower at 4,096 tokens)
        divisor = score_steps.scale_of(steps).divisor
        if not score_steps.fusable(steps):  # the context step by step, nothing kept (a soft-cap: softcap.py)
            context = attention_steps(q, k, v, additive, scale, Recorder(False), "", steps=steps, bias=mask.bias)
        elif mask.blocks_nothing or mask.causal_only:
            context = fused_attention(q, k, v, None, scale, is_causal=mask.causal_only, divisor=divisor)
        else:
            context = fused_attention(q, k, v, mask.fused(), scale, blocked_rows=False, divisor=divisor)
            if mask.blocked_rows:  # kernels need not give zeros (NaN, or a uniform average) for such rows
                blocked = torch.isinf(additive).all(dim=-1, keepdim=True)  # [B|1, 1, Tq, 1]
                context = context.masked_fill(blocked, 0.0)  # [B, H, Tq, dk]
    run = SiteRun(RunKey(scale, q.shape[-1], mask.bias is not None), additive, mask.blocks_nothing, mask.bias)
    record_rules(rec, prefix, score_steps.site_plan(steps, prefix, run.key), run, context)
    return context


def stable_context(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    additive: Tensor,
    bias: Tensor | None,
    scale: bool,
    steps: score_steps.SiteSteps,
) -> Tensor:
    """The context [B, H, Tq, dk] a recording run computes: attention_steps one head and one block of rows at
    a time, nothing kept (row_stable.by_blocks). Shapes as attention_steps; `additive` [B|1, 1, Tq, Tk]."""

    def block(q: Tensor, k: Tensor, v: Tensor, additive: Tensor, bias: Tensor | None) -> Tensor:
        return attention_steps(q, k, v, additive, scale, Recorder(False), "", steps=steps, bias=bias)

    return row_stable.by_blocks(block, q, k, v, additive, bias)


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
        # each mechanism's factor too (DeBERTa: √(dk · (1 + terms)) = √dk · √(1 + terms))
        score_divisor=score_steps.divisor(
            cfg, (float(layer_index + 1) if cfg.attn_scale_inverse_layer else 1.0) * cfg.score_scale_factor
        ),
    )
    attention.steps = score_steps.site_steps(cfg, score_steps.scale_of(attention.steps).divisor)
    attention.projecting_mechanisms = score_steps.projecting_mechanisms(cfg)
    attention.term_mechanisms = score_steps.term_mechanisms(cfg)
    score_steps.build(attention, cfg)  # each mechanism's parameters (QK-norm, DeBERTa's projections, …)
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
