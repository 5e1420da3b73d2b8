"""attnlab: step through every computation of a live Transformer.

Python API::

    import attnlab
    m = attnlab.load("model.safetensors")        # or attnlab.load_bundled("translation")
    m = attnlab.load("openai-community/gpt2")    # from the Hugging Face cache, offline
    t = m.trace(src="the black cat sees the dog", tgt="le chat noir")
    t["enc.0.self.weights"]                      # [heads, src, src] float32 CPU tensor
    s = attnlab.load_snapshots("translation")    # the same model at a few training steps
    s.model_at(s.steps[0]).trace(src="the black cat sees the dog")
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use (see __getattr__)
    from attnlab.checkpoints.additive import AdditiveModel
    from attnlab.checkpoints.snapshots import Snapshots
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

__version__ = "0.1.0"
__all__ = ["ModelConfig", "RunOptions", "Trace", "load", "load_bundled", "load_snapshots", "__version__"]


def load(path: str | Path, **kwargs: Any) -> LiveModel | AdditiveModel:
    """Load a checkpoint (.safetensors, or .pt/.pth through weights_only, a model folder, or a model in the
    Hugging Face cache by id: "org/name" or "org/name@revision", read offline) as a LiveModel; an
    additive-attention (GRU) file written by attnlab.checkpoints.additive loads as an AdditiveModel."""
    from attnlab.checkpoints import load_checkpoint
    from attnlab.checkpoints.additive import is_additive_file, load_additive

    if is_additive_file(path):
        return load_additive(path)
    return load_checkpoint(path, **kwargs)


def load_bundled(name: str = "translation") -> LiveModel | AdditiveModel:
    """Load one of the classroom models shipped in resources/ (falls back to a small random model);
    "bahdanau" is the additive-attention GRU model (an AdditiveModel)."""
    from attnlab.checkpoints import load_bundled as _load_bundled
    from attnlab.checkpoints.additive import BUNDLED_NAME, load_additive

    if name == BUNDLED_NAME:
        return load_additive()
    return _load_bundled(name)


def load_snapshots(
    source: str | os.PathLike[str] | LiveModel = "translation", model: LiveModel | None = None
) -> Snapshots:
    """The weights of a model at a few training steps (a `Snapshots`: `.steps`, `.model_at(step)`,
    `.tensors_at(step)`, `.loss_at(step)`). `source`: a bundled model's name, a checkpoint with a
    <stem>.snapshots.safetensors beside it, that file itself, or a model loaded from such a checkpoint."""
    from attnlab.checkpoints.snapshots import load_snapshots as _load_snapshots

    return _load_snapshots(source, model)


def __getattr__(name: str) -> type[Trace] | type[ModelConfig] | type[RunOptions]:
    # Trace pulls in torch (~1.3 s): imported on first use so the desktop app can paint its window first.
    # ModelConfig and RunOptions too: importing one engine module (`import attnlab.engine.norms`) runs this
    # package's __init__ first, which then loads nothing of the engine.
    if name == "Trace":
        from attnlab.engine.trace import Trace

        return Trace
    if name == "ModelConfig":
        from attnlab.engine.config import ModelConfig

        return ModelConfig
    if name == "RunOptions":
        from attnlab.engine.options import RunOptions

        return RunOptions
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
