"""The settings of choosing the next token (issue 35), without torch: what RunOptions checks and what the option
table, the session and the commands read at start-up. engine/sampling.py does the choosing itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnlab.limits import excerpt

# transformers' defaults for the fields a generation_config.json may leave out (see the module docstring)
DEFAULTS: dict[str, Any] = {"sample": False, "temperature": 1.0, "top_k": 50, "top_p": 1.0, "seed": 0}
# RunOptions field -> generation_config.json key (the seed has none: transformers reads torch's global seed)
CONFIG_KEYS = {"sample": "do_sample", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p"}
FIELDS = ("sample", "temperature", "top_k", "top_p", "seed")
GENERATION_KEY = "generation"  # LiveModel.metadata[GENERATION_KEY]: {field: {"value", "source"}} (trace.info too)
MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed takes a 64-bit seed


@dataclass(frozen=True)
class SamplingSettings:
    """How the next token is chosen: `sample` False is greedy (the argmax; the rest is unused)."""

    sample: bool = False
    temperature: float = 1.0
    top_k: int = 50  # 0: no top-k cut
    top_p: float = 1.0  # 1: no top-p cut
    seed: int = 0

    @classmethod
    def of(cls, options: Any) -> SamplingSettings:
        """The settings a RunOptions (or anything with these fields) asks for."""
        return cls(*(getattr(options, f) for f in FIELDS))

    def text(self) -> str:
        """The settings in a few words ('greedy' when sampling is off)."""
        if not self.sample:
            return "greedy (the most probable token)"
        cuts = [f"top-k {self.top_k}" if self.top_k else "", f"top-p {self.top_p:g}" if self.top_p < 1 else ""]
        said = ", ".join(c for c in cuts if c) or "no cut"
        return f"sampling at T = {self.temperature:g}, {said}, seed {self.seed}"


def sampling_problems(options: Any) -> list[str]:
    """Why the sampling fields of `options` cannot be used (empty: they can). The temperature is checked with
    the other run options (options.temperature_problems)."""
    p: list[str] = []
    if not isinstance(options.sample, bool):
        p.append(f"sample must be True or False (got {excerpt(options.sample)})")
    k = options.top_k
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        p.append(f"top_k must be a whole number of at least 0 (0: no top-k cut), not {excerpt(k)}")
    t = options.top_p
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1:
        p.append(f"top_p must be a number above 0 and at most 1 (1: no top-p cut), not {excerpt(t)}")
    s = options.seed
    if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED:
        p.append(f"seed must be a whole number from 0 to {MAX_SEED}, not {excerpt(s)}")
    return p


def sources(options: Any, defaults: dict[str, Any] | None) -> list[tuple[str, Any, str]]:
    """(field, value, where it came from) for each sampling field: "you" when `options` differ from the
    model's defaults (`defaults`: LiveModel.metadata[GENERATION_KEY]), else that default's source
    ("generation_config.json (top_p)", "default")."""
    rows = []
    for field in FIELDS:
        entry = (defaults or {}).get(field) or {"value": DEFAULTS[field], "source": "default"}
        value = getattr(options, field)
        rows.append((field, value, "you" if value != entry.get("value") else str(entry.get("source", "default"))))
    return rows


def model_defaults(defaults: dict[str, Any] | None) -> dict[str, Any]:
    """{field: value} the model's generation_config.json sets (LiveModel.metadata[GENERATION_KEY])."""
    return {f: e["value"] for f, e in (defaults or {}).items() if f in FIELDS and isinstance(e, dict) and "value" in e}


def with_model_defaults(options: Any, metadata: dict[str, Any] | None) -> Any:
    """`options` (RunOptions) with the sampling values the model's generation_config.json sets."""
    return options.replace(**model_defaults((metadata or {}).get(GENERATION_KEY)))
