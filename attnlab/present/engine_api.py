"""What the widgets may know of the engine, in one place: the name grammar and the types they hold or annotate
with. attnlab.ui imports these from here, never from attnlab.engine (an import-linter contract in pyproject.toml
says so), so every engine fact a widget reads passes through present/ (view-models, stages, words, facts).

The torch-free parts load at once; Trace, LiveModel, pick_device and sinusoidal_period load on first use (they
pull in torch, ~1.3 s, which the window does not wait for at start-up)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.engine.config import ARCHITECTURES, POSITIONALS, ModelConfig
from attnlab.engine.options import ABLATION_MODES, ResolvedOptions, RunOptions, head_choices
from attnlab.engine.pairs import INPUT_CUT

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel, pick_device
    from attnlab.engine.positional import sinusoidal_period
    from attnlab.engine.trace import Trace

# name -> the engine module that defines it (imported when a widget first asks for the name)
_ON_FIRST_USE = {
    "LiveModel": "attnlab.engine.live",
    "pick_device": "attnlab.engine.live",
    "sinusoidal_period": "attnlab.engine.positional",
    "Trace": "attnlab.engine.trace",
}


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_ON_FIRST_USE[name]), name)


__all__ = [
    "ABLATION_MODES",
    "ARCHITECTURES",
    "INPUT_CUT",
    "POSITIONALS",
    "LiveModel",
    "ModelConfig",
    "ResolvedOptions",
    "RunOptions",
    "Trace",
    "head_choices",
    "names",
    "pick_device",
    "sinusoidal_period",
]
