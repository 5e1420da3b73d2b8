"""The engine's types as the widgets may name them: opaque handles, for annotations only.

A widget holds a Trace, a LiveModel, a ModelConfig, RunOptions or ResolvedOptions that session or present/
handed it, passes it back to present/ or session functions, and names its type in annotations; it never calls
into it, reads its fields for something to show, nor builds one. Every word and number a widget shows comes
from a present/ function (the view-models in present/views/, present/window_facts.py, present/model_info.py,
present/schematic_boxes.py, …) or from the Session.

So this module holds nothing at run time: ui imports it under `if TYPE_CHECKING:` only, and it imports the
engine under TYPE_CHECKING only (tests/ui/test_ui_boundary.py checks both, and that no module in ui imports
attnlab.engine, uses importlib, or reaches into an engine object; an import-linter contract in pyproject.toml
checks the direct imports too)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import ResolvedOptions, RunOptions
    from attnlab.engine.trace import Trace

__all__ = ["LiveModel", "ModelConfig", "ResolvedOptions", "RunOptions", "Trace"]
