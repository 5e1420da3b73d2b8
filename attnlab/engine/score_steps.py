"""The registry of attention mechanisms and the score steps of a site, built from the config (score_step.py
says what a step and a mechanism are).

Adding a mechanism: one module that defines its `ScoreStep` (if it works on the score map) and its
`Mechanism` (`MECHANISM`), and its entry in the torch-free registry (mechanisms.REGISTRY: the module's path,
its stages, its config checks); MECHANISMS below imports each registered module. Everything that lists a site's
steps reads them from here: the forward (layers.attention_steps, recorded_fused_attention), the rules of the
maps (derived_blocks' CHAIN: derived.MAP_RULES, registered by the mechanism modules), the memory budget
(budget.py: `trace_floats`, `working_floats`, `site_floats`); present/stages.py reads the stages from the
registry.
"""

from __future__ import annotations

import importlib
import math
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from torch import Tensor

from attnlab.engine import mechanisms, names
from attnlab.engine.derived import Derived
from attnlab.engine.score_step import MASK, SCALE, Mechanism, RunKey, Scale, ScoreStep

if TYPE_CHECKING:
    from torch import nn

    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions


def _load(entry: mechanisms.Registration) -> Mechanism:
    """The registered module's `MECHANISM` (importing the module registers its rules with derived.py)."""
    mechanism = importlib.import_module(entry.module).MECHANISM
    assert isinstance(mechanism, Mechanism) and mechanism.name == entry.name, entry.module
    return mechanism


# In the order of the registry: their steps apply to a site's map (after the scaling, before the mask) in it.
MECHANISMS: tuple[Mechanism, ...] = tuple(_load(entry) for entry in mechanisms.REGISTRY)

SiteSteps = tuple[ScoreStep, ...]


def plain(divisor: float = 1.0) -> SiteSteps:
    """Bare attention's steps: ÷ √dₖ · divisor, then the mask."""
    return (SCALE if divisor == 1.0 else Scale("scaled", "scaled", divisor), MASK)


PLAIN = plain()


def site_steps(config: ModelConfig, divisor: float = 1.0) -> SiteSteps:
    """A site's map steps for an attention sub-layer of `config` whose scores are divided by √dₖ · divisor."""
    mechanisms = tuple(step for m in MECHANISMS for step in m.map_steps(config))
    return (plain(divisor)[0], *mechanisms, MASK)


def build(attention: nn.Module, config: ModelConfig) -> None:
    """Give an attention sub-layer every mechanism's parameters (layers.make_attention)."""
    for mechanism in MECHANISMS:
        mechanism.build(attention, config)


def divisor(config: ModelConfig, divisor: float) -> float:
    """`divisor` (the layer's own: GPT-2's inverse layer index, a config's score scale) times each mechanism's
    factor: the scores are divided by √dₖ · this when scaling."""
    for mechanism in MECHANISMS:
        divisor *= mechanism.divisor(config)
    return divisor


def folded_mask(terms: Tensor, additive: Tensor, scale: bool, d_head: int, divisor: float) -> Tensor:
    """The fused kernel's attn_mask for a run that records nothing: the score terms scaled as the scores are,
    plus the mask. terms [B, H, T, T], additive [B|1, 1, T, T] -> [B, H, T, T]"""
    factor = 1.0 / (math.sqrt(d_head) * divisor) if scale else 1.0
    return terms * factor + additive


def projecting_mechanisms(config: ModelConfig) -> tuple[Mechanism, ...]:
    """The mechanisms that change the projected Q and K in a model of `config` (QK-norm)."""
    return tuple(m for m in MECHANISMS if m.projects(config))


def term_mechanisms(config: ModelConfig) -> tuple[Mechanism, ...]:
    """The mechanisms that add terms to Q Kᵀ in a model of `config` (DeBERTa's, BERT relative_key's)."""
    return tuple(m for m in MECHANISMS if m.has_terms(config))


@lru_cache(maxsize=256)
def fusable(steps: SiteSteps) -> bool:
    """Whether the fused kernel can do every step (with the mask and what rides on it)."""
    return all(step.fusable for step in steps)


@lru_cache(maxsize=256)
def active(steps: SiteSteps, key: RunKey) -> SiteSteps:
    """The steps that run in a run with this key."""
    return tuple(step for step in steps if step.active(key))


class SitePlan(NamedTuple):
    """A site's recorded maps for one run key: (entry name, rule) of the scores, of each active step's map, of
    the weights and of the context; the active steps."""

    scores: tuple[str, Derived]
    steps: SiteSteps
    maps: tuple[tuple[str, Derived], ...]
    weights: tuple[str, Derived]
    context: tuple[str, Derived]


@lru_cache(maxsize=4096)
def site_plan(steps: SiteSteps, site: str, key: RunKey) -> SitePlan:
    """How a site's scores, each active step's map, its weights and its context are derived on read (derived.py),
    built once per site and run key: each map from the one before it."""
    n = names.site_entries(site)
    below, maps = n.scores, []
    for step in active(steps, key):
        name = names.site_entry(site, step.entry)
        maps.append((name, step.derived(site, below, key)))
        below = name
    return SitePlan(
        (n.scores, Derived("scores", (n.q, n.k))),
        active(steps, key),
        tuple(maps),
        (n.weights, Derived("softmax_rows", (below,))),
        (n.context, Derived("weighted_sum", (n.weights, n.v))),
    )


@lru_cache(maxsize=256)
def scale_of(steps: SiteSteps) -> Scale:
    """The site's scaling step (the first)."""
    first = steps[0]
    assert isinstance(first, Scale), "a site's steps start with its scaling"
    return first


def trace_floats(config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, lean: bool) -> int:
    """What every mechanism adds to a recorded trace (budget.py)."""
    return sum(m.trace_floats(config, options, src_len, tgt_len, lean) for m in MECHANISMS)


def working_floats(config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int) -> int:
    """What every mechanism adds to a lean run's working memory (budget.py)."""
    return sum(m.working_floats(config, options, src_len, tgt_len) for m in MECHANISMS)


def site_floats(config: ModelConfig, options: RunOptions, Tq: int, Tk: int) -> int:
    """What every mechanism adds to one recorded site of Tq queries and Tk keys (budget.py)."""
    return sum(m.site_floats(config, options, Tq, Tk) for m in MECHANISMS)


def stepwise(config: ModelConfig, options: RunOptions) -> bool:
    """Whether some mechanism's sites compute every head's map at once in a recording run (budget.py)."""
    return any(m.stepwise(config, options) for m in MECHANISMS)
