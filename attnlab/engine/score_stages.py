"""The stages each attention mechanism adds to a site's stage list, torch-free.

The stage list is made before torch loads (the `--stage` check of `attnlab app`, commands/app.py, runs before the
first paint: tests/project/test_startup_imports.py), so what a mechanism adds to it cannot live in its module (which
imports torch): each mechanism registered in score_steps.MECHANISMS has one entry here, under its name
(tests/engine/test_score_steps.py checks both lists agree). present/stages.py reads `site_stages`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnlab.engine import names

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig


@dataclass(frozen=True)
class StageStep:
    """A stage a mechanism adds to a site: its kind (the entry it shows), its title, and the stage of the common
    list (present/stages.py ATTENTION_STEPS) it goes before."""

    kind: str
    title: str
    before: str


Stages = Callable[["ModelConfig", bool, str], tuple[StageStep, ...]]


def _qk_norm(config: ModelConfig, scale: bool, site: str) -> tuple[StageStep, ...]:
    return (StageStep("qk_norm", "QK-norm", "qkv"),) if config.qk_norm != "none" else ()


def _disentangled(config: ModelConfig, scale: bool, site: str) -> tuple[StageStep, ...]:
    terms = ("c2c", *config.disentangled) if config.disentangled else ()
    return tuple(StageStep(term, term, "scores") for term in terms)


def _relative_key(config: ModelConfig, scale: bool, site: str) -> tuple[StageStep, ...]:
    terms = {"key": ("rel_key",), "key_query": ("rel_key", "rel_query")}.get(config.rel_key_terms, ())
    return tuple(StageStep(term, term, "scores") for term in terms)


def _position_bias(config: ModelConfig, scale: bool, site: str) -> tuple[StageStep, ...]:
    if config.position_bias == "none" or names.split_site(site)[2] != "self":  # self-attention sites only
        return ()
    return (StageStep("bias", "position bias B", "mask"), StageStep("biased", "scaled + B", "mask"))


def _softcap(config: ModelConfig, scale: bool, site: str) -> tuple[StageStep, ...]:
    return (StageStep("capped", "soft-cap c·tanh(x/c)", "mask"),) if config.attn_softcap else ()


# mechanism name (Mechanism.name) -> its stages, in the order of score_steps.MECHANISMS
STAGES: dict[str, Stages] = {
    "qk_norm": _qk_norm,
    "disentangled": _disentangled,
    "relative_key": _relative_key,
    "position_bias": _position_bias,
    "softcap": _softcap,
}


def site_stages(config: ModelConfig, scale: bool, site: str) -> tuple[StageStep, ...]:
    """The stages every mechanism adds to a site, in order: (kind, title, the common stage they go before)."""
    return tuple(stage for stages in STAGES.values() for stage in stages(config, scale, site))
