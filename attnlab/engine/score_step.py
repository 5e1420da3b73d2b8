"""Attention as a list of named score steps: what one site does to its score map between Q Kᵀ and the softmax.

A site's map [B, H, Tq, Tk] goes through a list of steps built once per attention sub-layer from the config
(score_steps.site_steps): the scaling (÷ √dₖ · divisor), then each mechanism's step in the order the registry
lists them (a position bias, a soft-cap, …), then the mask. Each `ScoreStep` says, for itself:

- its entry (`entry`: the site entry it records, which is also its stage kind; the stages a mechanism adds,
  kind, title and place, are in the torch-free registry, mechanisms.py);
- how it applies in the forward (`apply`: in place on the map when the map before it is kept by nobody, the
  same kernels either way, so the numbers are the same);
- how it is derived on read (`derived`: a `Derived` rule named `rule`, reading the entry before it and the
  step's own inputs), and what it stores beside (`stored`: a position bias's table);
- whether the fused kernel can do it (`fusable`; a soft-cap cannot: such a site runs step by step).

layers.attention_steps (the step-by-step forward), layers.recorded_fused_attention (a recording run's
rules), derived_blocks' CHAIN (the map rules read block by block) and the stage list all read these lists.
A mechanism's module defines its `Mechanism` (`MECHANISM`): its map steps, its terms, its parameters on the
attention sub-layer, its floats for the memory budget (engine/budget.py); its one entry in the torch-free
registry (mechanisms.REGISTRY: module path, stages, config checks) lists it in score_steps.MECHANISMS.

Shapes: B batch, H heads, Tq queries, Tk keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from torch import Tensor

from attnlab.engine import names
from attnlab.engine.derived import Derived
from attnlab.engine.run_inputs import RelativeInputs

if TYPE_CHECKING:
    from torch import nn

    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions
    from attnlab.engine.recorder import Recorder


class RunKey(NamedTuple):
    """What a site's rules depend on beside its steps: the run's scale toggle, its d_k, and whether the mask
    carries a position bias (self-attention of a model with one, positions on)."""

    scale: bool
    d_head: int
    biased: bool = False


class SiteRun(NamedTuple):
    """One run of one site as its steps read it: the RunKey, the mask [B|1, 1, Tq, Tk] (0 allowed, -inf
    blocked) and what rides on it: a position bias [1, H, Tq, Tk] or None (engine/position_bias.py)."""

    key: RunKey
    mask: Tensor
    mask_is_zero: bool = False  # the mask blocks nothing: adding it would only copy
    bias: Tensor | None = None


@dataclass(frozen=True, eq=False)
class ScoreStep:
    """One named step on a site's score map [B, H, Tq, Tk] (see the module text). Subclasses override
    `apply` and, where they read more than the map before them, `inputs`, `params` and `stored`. Steps compare
    and hash by identity (`eq=False`, subclasses too): a site's step tuple is a cache key on every forward."""

    entry: str  # the site entry it records ("scaled", "biased", "capped", "masked"): also its stage kind
    rule: str  # its Derived rule (derived.RULES)

    fusable = True  # whether the fused kernel does this step too (with the mask, or folded into it)

    def active(self, key: RunKey) -> bool:
        """Whether the step runs (and records) in a run with this key."""
        return True

    def apply(self, x: Tensor, run: SiteRun, in_place: bool) -> Tensor:
        """x [B, H, Tq, Tk] -> the map after this step (into x itself when `in_place`)."""
        raise NotImplementedError

    def params(self, key: RunKey) -> tuple[object, ...]:
        """The rule's constants."""
        return ()

    def inputs(self, site: str, below: str) -> tuple[str, ...]:
        """The rule's inputs: the entry before this step, and whatever else it reads."""
        return (below,)

    def stored(self, site: str, run: SiteRun) -> tuple[tuple[str, Tensor], ...]:
        """What the step stores beside its map (recorded before it): nothing by default."""
        return ()

    def derived(self, site: str, below: str, key: RunKey) -> Derived:
        """How the step's map is derived on read."""
        return Derived(self.rule, self.inputs(site, below), self.params(key))


@dataclass(frozen=True, eq=False)
class Scale(ScoreStep):
    """scores / (√dₖ · divisor) when the run scales (GPT-2's scale_attn_by_inverse_layer_idx: divisor l + 1;
    DeBERTa: √(1 + terms)); the map itself when scaling is off."""

    divisor: float = 1.0

    def params(self, key: RunKey) -> tuple[object, ...]:
        return (key.scale, key.d_head, self.divisor)

    def apply(self, x: Tensor, run: SiteRun, in_place: bool) -> Tensor:
        if not run.key.scale:
            return x
        denominator = math.sqrt(run.key.d_head) * self.divisor
        return x.div_(denominator) if in_place else x / denominator  # [B, H, Tq, Tk]


@dataclass(frozen=True, eq=False)
class Mask(ScoreStep):
    """+ the additive mask (0 or -inf), always the last step; the mask [Tq, Tk] is stored (one tensor shared
    by the layers that block the same cells)."""

    def inputs(self, site: str, below: str) -> tuple[str, ...]:
        return (below, names.site_entry(site, "mask"))

    def stored(self, site: str, run: SiteRun) -> tuple[tuple[str, Tensor], ...]:
        return ((names.site_entries(site).mask, run.mask[0]),)  # the names built once per site

    def apply(self, x: Tensor, run: SiteRun, in_place: bool) -> Tensor:
        if run.mask_is_zero:
            return x
        return x.add_(run.mask) if in_place else x + run.mask  # [B, H, Tq, Tk]


SCALE = Scale("scaled", "scaled")
MASK = Mask("masked", "masked")


class Mechanism:
    """One attention mechanism's registration (score_steps.MECHANISMS): every hook says what the mechanism
    adds, nothing by default. A mechanism module defines one subclass instance, `MECHANISM`."""

    name = ""

    def divisor(self, config: ModelConfig) -> float:
        """A factor of the scaling's divisor: the scores are divided by √dₖ · this (DeBERTa: √(1 + terms))."""
        return 1.0

    def projects(self, config: ModelConfig) -> bool:
        """Whether it changes the projected queries and keys (`project`)."""
        return False

    def project(
        self, attention: nn.Module, q_in: Tensor, k_in: Tensor, n_heads: int, rec: Recorder, prefix: str
    ) -> tuple[Tensor, Tensor]:
        """q_in [B, Tq, H·dk], k_in [B, Tk, kv_dim] (the projections, before rotary positions) -> the same
        shapes, changed (QK-norm), recording what it shows."""
        return q_in, k_in

    def has_terms(self, config: ModelConfig) -> bool:
        """Whether it adds terms to Q Kᵀ before the steps (`terms`)."""
        return False

    def terms(
        self,
        attention: nn.Module,
        q: Tensor,
        k: Tensor,
        relative: RelativeInputs | None,
        projections: bool,
        rec: Recorder,
        prefix: str,
    ) -> Tensor | None:
        """Its terms [B, H, Tq, Tk] added to Q Kᵀ (recorded under their own entries), or None (positions off).
        q, k [B, H, Tq|Tk, dk]. A site with terms stores its scores and runs step by step when recording."""
        return None

    def map_steps(self, config: ModelConfig) -> tuple[ScoreStep, ...]:
        """The steps it adds to a site's map, between the scaling and the mask."""
        return ()

    def build(self, attention: nn.Module, config: ModelConfig) -> None:
        """Give an attention sub-layer the parameters the mechanism needs (make_attention)."""

    def trace_floats(self, config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, lean: bool) -> int:
        """Floats it adds to a recorded trace (`lean`: a run that keeps each layer's output only, engine/replay.py)."""
        return 0

    def working_floats(self, config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int) -> int:
        """Floats a lean run holds for it while it reads a recomputed layer (engine/budget.py working_bytes)."""
        return 0

    def site_floats(self, config: ModelConfig, options: RunOptions, Tq: int, Tk: int) -> int:
        """Floats it adds to every recorded site of Tq queries and Tk keys (a whole layer's record)."""
        return 0

    def stepwise(self, config: ModelConfig, options: RunOptions) -> bool:
        """Whether its sites compute every head's map at once in a recording run (no fused kernel)."""
        return False
