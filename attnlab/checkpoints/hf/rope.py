"""Rotary settings read from config.json exactly as transformers 5 reads them, then turned into ModelConfig fields.

transformers' RotaryEmbeddingConfigMixin.convert_rope_params_to_dict and standardize_rope_params decide which of
the two spellings counts: a non-empty `rope_scaling` (transformers 4.x) REPLACES `rope_parameters` (5.x) whole,
keys are not merged; `rope_theta` and `partial_rotary_factor` in that dict win over the top-level fields, which
win over the config class's defaults; `rope_type` wins over the old `type`; and for llama3 / yarn / longrope a
top-level `original_max_position_embeddings` wins over the dict's (then max_position_embeddings). Families whose
config class reads them otherwise say so in a RopeReading (GPT-NeoX: rotary_emb_base / rotary_pct; Phi-3: su and
yarn are longrope). What attnlab cannot compute is refused in one line naming the field it came from."""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from attnlab.checkpoints.hf.common import HFConfig, field, int_field, refuse

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")  # transformers' rope_type values attnlab computes
ORIGINAL_LENGTH_TYPES = ("llama3", "yarn", "longrope")  # the types transformers gives original_max_position_embeddings


@dataclass(frozen=True)
class RopeReading:
    """How one family's config class fills in what config.json leaves out (its convert_rope_params_to_dict)."""

    default_theta: float = 10_000.0  # the class's default_theta
    theta_key: str = "rope_theta"  # the top-level field read when the dict names no rope_theta
    partial_key: str = "partial_rotary_factor"
    partial_default: float | None = None  # Phi: 0.5, StableLM: 0.25, GPT-NeoX: 0.25 (None: the whole head)
    aliases: dict[str, str] = dataclass_field(default_factory=dict)  # Phi-3: su, yarn -> longrope
    types: tuple[str, ...] | None = None  # the rope types the class accepts (Phi-3: default, longrope); None: any


PLAIN = RopeReading()


def standard_rope(hf: HFConfig, reading: RopeReading = PLAIN) -> tuple[str, dict[str, Any]]:
    """(the config.json field the settings came from, transformers' standardised rope_parameters) for a family
    with one rope for every layer."""
    scaling, params = hf.get("rope_scaling"), hf.get("rope_parameters")
    key = "rope_scaling" if scaling else "rope_parameters"
    chosen = scaling or params  # a non-empty rope_scaling replaces rope_parameters whole
    if chosen is None:
        chosen = {}
    if not isinstance(chosen, dict):
        raise refuse(key, f"must be a JSON object, not {chosen!r}")
    out = dict(chosen)
    out.setdefault("rope_theta", field(hf, reading.theta_key, reading.default_theta))
    partial = field(hf, reading.partial_key, reading.partial_default)
    if partial is not None:
        out.setdefault("partial_rotary_factor", partial)
    out.setdefault("rope_type", out.get("type", "default"))
    out["rope_type"] = reading.aliases.get(out["rope_type"], out["rope_type"])
    if reading.types is not None and out["rope_type"] not in reading.types:
        raise refuse(key, f"rope_type {out['rope_type']!r}: this family takes only {', '.join(reading.types)}")
    if out["rope_type"] in ORIGINAL_LENGTH_TYPES and field(hf, "original_max_position_embeddings") is not None:
        out["original_max_position_embeddings"] = hf["original_max_position_embeddings"]  # the top-level one wins
    return key, out


def rope_settings(hf: HFConfig, partial: bool = False, reading: RopeReading = PLAIN) -> dict[str, Any]:
    """The ModelConfig's rotary fields from config.json (old style: rope_theta + rope_scaling {type | rope_type,
    factor, …}; new style: rope_parameters {rope_type, rope_theta, …}), with transformers' precedence.
    `partial`: the family turns only partial_rotary_factor of each head (StableLM); others refuse it."""
    key, params = standard_rope(hf, reading)
    return settings_from(hf, key, params, partial)


def settings_from(hf: HFConfig, key: str, params: dict[str, Any], partial: bool = False) -> dict[str, Any]:
    """The ModelConfig's rotary fields from one standardised rope_parameters dict (`key`: the field it came from)."""
    kind = params.get("rope_type", "default")
    if kind not in ROPE_TYPES:
        raise refuse(key, f"rope_type {kind!r} is not supported (attnlab computes {', '.join(ROPE_TYPES)})")
    theta = params.get("rope_theta")
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 0 < theta < float("inf"):
        raise refuse("rope_theta", f"must be a positive number, not {theta!r}")
    fraction = params.get("partial_rotary_factor", 1.0)
    if fraction != 1.0 and not partial:
        raise refuse("partial_rotary_factor", f"{fraction!r}: this family rotates every dimension of a head")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise refuse("partial_rotary_factor", f"must be more than 0 and at most 1, not {fraction!r}")
    settings: dict[str, Any] = {"rope_theta": float(theta), "rotary_fraction": float(fraction)}
    if kind == "default":
        return settings
    max_len = int_field(hf, "max_position_embeddings", 2048)
    original = int(
        _positive(key, "original_max_position_embeddings", params.get("original_max_position_embeddings") or max_len)
    )
    factor = params.get("factor")
    if factor is None and kind == "yarn":
        factor = max_len / original  # as transformers infers it (DeepSeek-style folders)
    settings.update(rope_scaling=kind, rope_factor=_positive(key, "factor", factor))
    if kind == "llama3":
        settings.update(
            rope_original_max_len=original,
            rope_low_freq_factor=_positive(key, "low_freq_factor", params.get("low_freq_factor")),
            rope_high_freq_factor=_positive(key, "high_freq_factor", params.get("high_freq_factor")),
        )
    if kind == "yarn":
        settings.update(
            rope_original_max_len=original,
            rope_beta_fast=_positive(key, "beta_fast", params.get("beta_fast") or 32),
            rope_beta_slow=_positive(key, "beta_slow", params.get("beta_slow") or 1),
            rope_truncate=bool(params.get("truncate", True)),
            rope_attention_factor=_yarn_attention_factor(key, params, settings["rope_factor"]),
        )
    return settings


def _positive(key: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise refuse(key, f"{name} must be a positive number, not {value!r}")
    return float(value)


def _yarn_attention_factor(key: str, params: dict[str, Any], factor: float) -> float:
    """YaRN's factor on cos and sin: given, or 0.1 ln(s) + 1 (with mscale / mscale_all_dim when both given)."""
    if params.get("attention_factor") is not None:
        return _positive(key, "attention_factor", params["attention_factor"])

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    m, m_all = params.get("mscale"), params.get("mscale_all_dim")
    return float(mscale(factor, m) / mscale(factor, m_all)) if m and m_all else mscale(factor)
