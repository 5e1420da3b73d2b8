"""What tests that drive a model (or bare layers) with their own Recorder make of it: a whole Trace."""

from __future__ import annotations

import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder, Trace


def finished(rec: Recorder, config: ModelConfig | None = None, options: RunOptions | None = None) -> Trace:
    """The Trace of what `rec` recorded, run with `config` and `options` (defaults: bare layers driven by hand
    are described by the default config), on the device its tensors are on."""
    config = config if config is not None else ModelConfig()
    entries = rec.entries()
    device = next((str(v.device) for v in entries.values() if isinstance(v, torch.Tensor)), "cpu")
    return Trace(entries, config=config, options=(options or RunOptions()).resolved(config), device=device, notices=[])
