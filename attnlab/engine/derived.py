"""Derived trace entries: what is a cheap function of stored entries is produced on read, not held.

A recorded run stores what the forward pass computed and could not cheaply redo (Q, K, V, the attention
output, FFN pre-activations, LayerNorm inputs and outputs, logits, …). Entries that follow from those in a
few cheap steps (`scores` = Q Kᵀ, `scaled`, `masked`, the attention `weights`, `concat`, a LayerNorm's mean
and variance, the FFN activation, `probs`) are kept as a `Derived` placeholder: a rule name, the names of
its inputs and the run's constants.

Every rule redoes exactly the operation the step-by-step forward (layers.attention_steps, what an eager
recording runs) does on the same numbers, so a derived entry equals that value (tests/engine/test_trace_derived.py
and test_trace_linear.py compare every entry with an eager recording).
The attention context is stored: a recording run computes it a block of rows at a time (layers.py
recorded_fused_attention), never holding a long input's maps for all heads; `weighted_sum` derives it only where a
site was recorded step by step. Maps too large to compute at once are read in blocks (derived_blocks.py).

A leaf of the engine: the rules here are plain torch. A rule that runs model code to derive its entry (the
logit lens, a lean run's recomputed layer) is registered by the module that makes such entries (`register`,
from logit_lens.py and replay.py), which sits above the model: the Trace reads every rule through `RULES`
without importing model code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from attnlab.engine import row_stable
from attnlab.engine.activations import ACTIVATION_FUNCTIONS

RECENT_DERIVED = 6  # derived entries a Trace keeps where they were computed (a site's chain: scores … weights)


@dataclass(frozen=True)
class Derived:
    """A trace entry produced on read: RULES[rule](*(value of each input), *params)."""

    rule: str
    inputs: tuple[str, ...]
    params: tuple[object, ...] = ()


class Readable(Protocol):
    """What reads derived entries needs of a trace (trace.Trace): its entries and the value of one where the run
    left it."""

    @property
    def entries(self) -> Mapping[str, object]: ...

    def device_value(self, name: str) -> Tensor: ...


def per_q_head(kv: Tensor, n_heads: int) -> Tensor:
    """K or V [H_kv, T, dk] with each shared head repeated for the H / H_kv consecutive Q heads it serves
    (grouped-query attention), as layers.attend does; the tensor itself when H_kv = H."""
    n_kv = kv.shape[-3]
    return kv if n_kv == n_heads else kv.repeat_interleave(n_heads // n_kv, dim=-3)  # [H, T, dk]


def _scores(q: Tensor, k: Tensor) -> Tensor:
    """q [H, Tq, dk], k [H or H_kv, Tk, dk] -> [H, Tq, Tk], the same product the forward pass took."""
    return row_stable.scores(q, per_q_head(k, q.shape[-3]))


def _scaled_by(scores: Tensor, scale: bool, d_head: int, divisor: float = 1.0) -> Tensor:
    """scores [H, Tq, Tk] -> scores / (√d_head · divisor) when scaling is on (divisor: GPT-2's layer index + 1)."""
    return scores / (math.sqrt(d_head) * divisor) if scale else scores


def _masked(scaled: Tensor, mask: Tensor) -> Tensor:
    """scaled [H, Tq, Tk] + mask [Tq, Tk] (0 or -inf)."""
    return scaled + mask


def _softmax_rows(masked: Tensor) -> Tensor:
    """masked [H, Tq, Tk] -> attention weights; a row with every key blocked (all -inf) gets zeros, as in
    layers.attention_steps (nan_to_num leaves every other row as it is)."""
    return row_stable.softmax(masked).nan_to_num(0.0)


def _weighted_sum(weights: Tensor, v: Tensor) -> Tensor:
    """weights [H, Tq, Tk] @ v [H or H_kv, Tk, dk] -> context [H, Tq, dk]."""
    return row_stable.weighted_sum(weights, per_q_head(v, weights.shape[-3]))


def _concat(context: Tensor) -> Tensor:
    """context [H, Tq, dk] -> [Tq, H·dk]: the heads side by side. With dk = 1 the reshape is a view with
    column-major strides; `compute` hands it on row-major."""
    H, Tq, dk = context.shape
    return context.transpose(0, 1).reshape(Tq, H * dk)  # [Tq, H·dk]


def _norm_stats(x: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """x [T, d] -> (mean [T], biased variance [T]) from the same fused kernel the LayerNorm ran."""
    _, mean, rstd = torch.native_layer_norm(x, x.shape[-1:], None, None, eps)  # mean, rstd [T, 1]
    return mean, rstd.pow(-2).sub_(eps).clamp_min_(0.0)


def _norm_mean(x: Tensor, eps: float) -> Tensor:
    return _norm_stats(x, eps)[0].squeeze(-1)  # [T]


def _norm_var(x: Tensor, eps: float) -> Tensor:
    return _norm_stats(x, eps)[1].squeeze(-1)  # [T]


def _activation(pre: Tensor, activation: str) -> Tensor:
    """FFN pre-activation [T, d_ff] -> hidden [T, d_ff], by the FFN's own function (activations.py)."""
    return ACTIVATION_FUNCTIONS[activation](pre)


def _add(a: Tensor, b: Tensor) -> Tensor:
    return a + b


def _probs(logits: Tensor, temperature: float) -> Tensor:
    """logits [T, V] -> softmax(logits / temperature) [T, V], safe for any temperature RunOptions accepts: the
    largest logit is subtracted first, so no NaN can appear and the argmax never changes."""
    wide = logits.float()  # [T, V]: the distribution in float32 whatever the weights' precision (issue 23)
    shifted = wide - wide.amax(dim=-1, keepdim=True)  # [T, V], max 0: a new tensor, so divided in place
    return torch.softmax(shifted.div_(temperature), dim=-1)  # one [T, V] temporary less (120 MB at 512 × 49,152)


RULES: dict[str, Callable[..., torch.Tensor]] = {
    "scores": _scores,
    "scaled": _scaled_by,
    "masked": _masked,
    "softmax_rows": _softmax_rows,
    "weighted_sum": _weighted_sum,
    "concat": _concat,
    "norm_mean": _norm_mean,
    "norm_var": _norm_var,
    "activation": _activation,
    "add": _add,
    "probs": _probs,
}
# Registered by the modules that make such entries (`register`): each score step's rule by its mechanism
# (engine/score_steps.py: "softcap", "biased", …); "lens_ids" and "lens_probs" by the logit lens (logit_lens.py);
# "replay" (a lean run's layer entry, its layer run again) by replay.py.

# Rules that work along the first dimension (one head, one position): for each input, whether it is indexed
# too. value[i] of such an entry is the rule applied to its inputs' [i], computed alone by the same kernels.
# Not the matrix products (scores, context): one head's product alone can differ from the batched one in the
# last bit.
SLICEABLE: dict[str, tuple[bool, ...]] = {
    "scaled": (True,),
    "masked": (True, False),  # the mask [Tq, Tk] is the same for every head
    "softmax_rows": (True,),
    "norm_mean": (True,),
    "norm_var": (True,),
    "activation": (True,),
    "add": (True, True),
    "probs": (True,),
}

# The rules of a site's maps [H, Tq, Tk], each from the map before it (derived_blocks.py reads them in blocks of
# rows): the attention's own, and each score step's (engine/score_step.py) as its mechanism registers it.
MAP_RULES: set[str] = {"scores", "scaled", "masked", "softmax_rows"}


def register(
    rule: str,
    function: Callable[..., torch.Tensor],
    sliceable: tuple[bool, ...] | None = None,
    *,
    map_rule: bool = False,
) -> None:
    """Make `rule` derivable: RULES[rule](*input values, *params). `sliceable`: the rule works along the first
    dimension (see SLICEABLE) and, for each input, whether it is indexed too; `map_rule`: a site map [H, Tq, Tk]
    from the map before it (MAP_RULES). Registering a rule twice with another function is a mistake (two meanings
    for one name)."""
    known = RULES.get(rule)
    if known is not None and known is not function:
        raise ValueError(f"derived rule {rule!r} is already registered")
    RULES[rule] = function
    if sliceable is not None:
        SLICEABLE[rule] = sliceable
    if map_rule:
        MAP_RULES.add(rule)


def compute(entry: Derived, inputs: list[torch.Tensor]) -> torch.Tensor:
    """The value of a derived entry from the values of its inputs (on their device, their dtype), always
    contiguous: a strided view handed on to numpy and Qt has crashed the app (issue 27)."""
    rule = RULES.get(entry.rule)
    if rule is None:
        raise KeyError(f"derived rule {entry.rule!r} is not registered: import the module that records it")
    return rule(*inputs, *entry.params).contiguous()
