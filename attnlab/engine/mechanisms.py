"""The registry of attention mechanisms, torch-free: one entry per mechanism (`REGISTRY`).

An entry names the mechanism, the module that holds its torch side (score steps, parameters, budget:
`MECHANISM`, a score_step.Mechanism), the stages it adds to a site's stage list, its config checks and the
parameters it adds. Each mechanism's torch-free part (stages, checks, parameter count) sits in its section
below, beside its entry. This module imports no torch: the stage list is made before torch loads (the
`--stage` check of `attnlab app`, tests/project/test_startup_imports.py) and config.py (ModelConfig.problems,
parameter_count) reads the checks here.

score_steps.py builds `MECHANISMS` from this list with `importlib.import_module(entry.module)`: an edge no static
tool sees, so tests/project/test_import_graph.py adds score_steps -> each registered module to the graph before
looking for circles (and checks each module exists). Adding a mechanism: its module (with `MECHANISM`), one
section + entry here, its field in config.py.

The checks read a config through `Fields` (the ModelConfig fields the mechanisms read): config.py imports this
module, so it cannot name ModelConfig back without a circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from attnlab import limits
from attnlab.engine import names


class Fields(Protocol):
    """What the mechanisms' torch-free parts read of a ModelConfig (config.py)."""

    @property
    def arch(self) -> str: ...
    @property
    def max_len(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def d_head(self) -> int: ...
    @property
    def n_encoder_layers(self) -> int: ...
    @property
    def qk_norm(self) -> str: ...
    @property
    def disentangled(self) -> tuple[str, ...]: ...
    @property
    def rel_terms(self) -> str: ...
    @property
    def rel_span(self) -> int: ...
    @property
    def rel_buckets(self) -> int: ...
    @property
    def rel_max_distance(self) -> int: ...
    @property
    def rel_norm(self) -> bool: ...
    @property
    def rel_share_key(self) -> bool: ...
    @property
    def rel_key_terms(self) -> str: ...
    @property
    def rel_key_span(self) -> int: ...
    @property
    def position_bias(self) -> str: ...
    @property
    def relative_buckets(self) -> int: ...
    @property
    def relative_max_distance(self) -> int: ...
    @property
    def attn_softcap(self) -> float: ...


@dataclass(frozen=True)
class StageStep:
    """A stage a mechanism adds to a site: its kind (the entry it shows), its title, and the stage of the common
    list (present/stages.py ATTENTION_STEPS) it goes before."""

    kind: str
    title: str
    before: str


Stages = Callable[[Fields, bool, str], tuple[StageStep, ...]]


def _no_problems(config: Fields) -> list[str]:
    return []


def _no_parameters(config: Fields) -> int:
    return 0


@dataclass(frozen=True)
class Registration:
    """One mechanism: its name (Mechanism.name), its module (defines `MECHANISM`), its stages (config, scale
    toggle, site) -> StageSteps, what is wrong with its config fields, and the parameters it adds."""

    name: str
    module: str
    stages: Stages
    problems: Callable[[Fields], list[str]] = _no_problems
    parameters: Callable[[Fields], int] = _no_parameters


# ---- QK-norm (engine/qk_norm.py; its γ are counted with the norms) --------------------------------------------
def _qk_norm_stages(config: Fields, scale: bool, site: str) -> tuple[StageStep, ...]:
    return (StageStep("qk_norm", "QK-norm", "qkv"),) if config.qk_norm != "none" else ()


# ---- DeBERTa's disentangled attention (engine/disentangled.py) ------------------------------------------------
def _disentangled_stages(config: Fields, scale: bool, site: str) -> tuple[StageStep, ...]:
    terms = ("c2c", *config.disentangled) if config.disentangled else ()
    return tuple(StageStep(term, term, "scores") for term in terms)


def _disentangled_problems(config: Fields) -> list[str]:
    """What is wrong with DeBERTa's relative-position fields (empty when nothing, or when the model has none)."""
    if not config.rel_terms:
        return []
    p: list[str] = []
    if set(config.rel_terms.split("|")) - {"c2p", "p2c"} or not config.disentangled:
        p.append(f"rel_terms must be 'c2p', 'p2c' or 'c2p|p2c' (got {limits.excerpt(config.rel_terms)})")
    if config.arch != "encoder-only":
        p.append("disentangled attention (rel_terms) is built for encoder-only models")
    if config.rel_span < 1:
        p.append(f"rel_span must be at least 1 with rel_terms (got {config.rel_span})")
    if config.rel_buckets < 0 or (config.rel_buckets > 0 and config.rel_max_distance - 1 <= config.rel_buckets // 2):
        p.append("rel_buckets needs rel_max_distance - 1 larger than half of rel_buckets (the log buckets' range)")
    return p


def _disentangled_parameters(config: Fields) -> int:
    """DeBERTa's relative table [2k, d], its LayerNorm and each layer's own position projections (0 without)."""
    if not config.disentangled:
        return 0
    d = config.d_model
    own = 0 if config.rel_share_key else len(config.disentangled)
    return 2 * config.rel_span * d + 2 * d * int(config.rel_norm) + config.n_encoder_layers * own * (d * d + d)


# ---- BERT's relative_key / relative_key_query (engine/relative_key.py) ----------------------------------------
def _relative_key_stages(config: Fields, scale: bool, site: str) -> tuple[StageStep, ...]:
    terms = {"key": ("rel_key",), "key_query": ("rel_key", "rel_query")}.get(config.rel_key_terms, ())
    return tuple(StageStep(term, term, "scores") for term in terms)


def _relative_key_problems(config: Fields) -> list[str]:
    """What is wrong with BERT's relative_key fields (empty when nothing or none)."""
    if not config.rel_key_terms:
        return []
    p: list[str] = []
    if config.rel_key_terms not in ("key", "key_query"):
        p.append(f"rel_key_terms must be 'key' or 'key_query' (got {limits.excerpt(config.rel_key_terms)})")
    if config.arch != "encoder-only":
        p.append("relative_key positions (rel_key_terms) are built for encoder-only models")
    if config.rel_key_span < 1 or config.max_len > config.rel_key_span:
        p.append(f"rel_key_span must be at least 1 and at least max_len (got {config.rel_key_span})")
    return p


def _relative_key_parameters(config: Fields) -> int:
    """Each encoder layer's distance table [2M − 1, d_k] (0 without)."""
    if not config.rel_key_terms:
        return 0
    return config.n_encoder_layers * (2 * config.rel_key_span - 1) * config.d_head


# ---- position bias: ALiBi, T5's buckets (engine/position_bias.py) ---------------------------------------------
def _position_bias_stages(config: Fields, scale: bool, site: str) -> tuple[StageStep, ...]:
    if config.position_bias == "none" or names.split_site(site)[2] != "self":  # self-attention sites only
        return ()
    return (StageStep("bias", "position bias B", "mask"), StageStep("biased", "scaled + B", "mask"))


def _position_bias_problems(config: Fields) -> list[str]:
    if config.position_bias == "t5" and not config.relative_max_distance > config.relative_buckets // 4 >= 1:
        return ["relative_buckets must be at least 4 and relative_max_distance more than a quarter of them"]
    return []


# ---- soft-cap (engine/softcap.py) ------------------------------------------------------------------------------
def _softcap_stages(config: Fields, scale: bool, site: str) -> tuple[StageStep, ...]:
    return (StageStep("capped", "soft-cap c·tanh(x/c)", "mask"),) if config.attn_softcap else ()


def _softcap_problems(config: Fields) -> list[str]:
    if not 0 <= config.attn_softcap < float("inf"):  # the logits' cap (final_softcap) is checked in config.py
        return [f"attn_softcap must be 0 or a positive number (got {config.attn_softcap})"]
    return []


# In the order their steps apply to a site's map (after the scaling, before the mask) and their stages appear.
REGISTRY: tuple[Registration, ...] = (
    Registration("qk_norm", "attnlab.engine.qk_norm", _qk_norm_stages),
    Registration(
        "disentangled",
        "attnlab.engine.disentangled",
        _disentangled_stages,
        _disentangled_problems,
        _disentangled_parameters,
    ),
    Registration(
        "relative_key",
        "attnlab.engine.relative_key",
        _relative_key_stages,
        _relative_key_problems,
        _relative_key_parameters,
    ),
    Registration("position_bias", "attnlab.engine.position_bias", _position_bias_stages, _position_bias_problems),
    Registration("softcap", "attnlab.engine.softcap", _softcap_stages, _softcap_problems),
)


def site_stages(config: Fields, scale: bool, site: str) -> tuple[StageStep, ...]:
    """The stages every mechanism adds to a site, in order: (kind, title, the common stage they go before)."""
    return tuple(stage for entry in REGISTRY for stage in entry.stages(config, scale, site))


def problems(config: Fields) -> list[str]:
    """Every mechanism's config problems (ModelConfig.problems)."""
    return [problem for entry in REGISTRY for problem in entry.problems(config)]


def parameter_count(config: Fields) -> int:
    """The parameters every mechanism adds (ModelConfig.parameter_count)."""
    return sum(entry.parameters(config) for entry in REGISTRY)
