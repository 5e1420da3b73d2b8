"""Where each setting of an opened model came from (config.json, inferred, assumed), reduced to the settings that
say something about this model: `attnlab info` prints them as a table and File → Model info… shows the same rows.
The settings its model type leaves at attnlab's defaults are counted, not listed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from attnlab.engine.config import ModelConfig

Row = tuple[str, str, str]  # (setting, value, where it came from)


def setting_rows(settings: dict[str, Any]) -> tuple[list[Row], int]:
    """(the rows that apply, how many settings were left out as attnlab's defaults)."""
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.default is not dataclasses.MISSING}
    rows = [
        (field, shown_value(entry.get("value")), str(entry.get("source", "")))
        for field, entry in settings.items()
        if isinstance(entry, dict) and applies(field, entry, defaults)
    ]
    return rows, len(settings) - len(rows)


def applies(field: str, entry: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Whether a setting says something about this model: read from its files, inferred with a reason,
    assumed, or decided by its model type (a value other than attnlab's default)."""
    source = str(entry.get("source", ""))
    if source.startswith("inferred from model_type"):
        return field not in defaults or entry.get("value") != defaults[field]
    return True


def shown_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def defaults_note(left: int) -> str:
    """The line that counts the settings left out ('' when none were)."""
    return f"{left} more keep attnlab's defaults, which this model type does not change" if left else ""
