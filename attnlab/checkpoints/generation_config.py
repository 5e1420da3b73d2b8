"""A model folder's generation_config.json as the sampling defaults (issue 35): do_sample, temperature, top_k
and top_p, each with where it came from, kept as LiveModel.metadata["generation"] (engine/sampling.py reads it).

A value the file does not set keeps transformers' default (engine/sampling.DEFAULTS, source "default"). A
value of the wrong type, or a file that cannot be read, is skipped with a notice: it never refuses the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_files import read_json_file
from attnlab.engine.options import temperature_problems
from attnlab.engine.sampling_settings import CONFIG_KEYS, DEFAULTS, FIELDS, sampling_problems
from attnlab.limits import excerpt

FILE = "generation_config.json"


def _problem(field: str, value: Any) -> str:
    """Why `value` cannot be the default of `field` ('' when it can)."""
    if field == "temperature":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"temperature must be a number, not {excerpt(value)}"
        return "; ".join(temperature_problems(float(value)))
    probe = dict(DEFAULTS, **{field: value})
    return "; ".join(sampling_problems(type("Probe", (), probe)))


def generation_defaults(folder: Path, notices: list[str]) -> dict[str, dict[str, Any]]:
    """{field: {"value", "source"}} for every sampling field; `notices` gets a line per value it skips."""
    problems = Problems(folder)
    found = read_json_file(folder / FILE, problems)
    notices.extend(f"{FILE} was not read: {p}" for p in problems.items)
    out: dict[str, dict[str, Any]] = {}
    for field in FIELDS:
        key = CONFIG_KEYS.get(field)
        value = found.get(key) if key else None
        why = _problem(field, value) if value is not None else "unset"
        if why == "" and value is not None:
            value = float(value) if field in ("temperature", "top_p") else value
            out[field] = {"value": value, "source": f"{FILE} ({key})"}
            continue
        if why != "unset":
            notices.append(f"{FILE}'s {key} is not used ({why}); the default {DEFAULTS[field]!r} is")
        out[field] = {"value": DEFAULTS[field], "source": "default"}
    return out
