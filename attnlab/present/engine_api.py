"""What the widgets may know of the engine, in one place: the name grammar and the types they hold or annotate
with. attnlab.ui imports these from here, never from attnlab.engine (an import-linter contract in pyproject.toml
says so), so every engine fact a widget reads passes through present/ (view-models, stages, words, facts).
"""

from __future__ import annotations

from attnlab.engine import names
from attnlab.engine.config import ARCHITECTURES, POSITIONALS, ModelConfig
from attnlab.engine.live import LiveModel, pick_device
from attnlab.engine.options import ABLATION_MODES, RunOptions, head_choices
from attnlab.engine.positional import sinusoidal_period
from attnlab.engine.trace import Trace

__all__ = [
    "ABLATION_MODES",
    "ARCHITECTURES",
    "POSITIONALS",
    "LiveModel",
    "ModelConfig",
    "RunOptions",
    "Trace",
    "head_choices",
    "names",
    "pick_device",
    "sinusoidal_period",
]
