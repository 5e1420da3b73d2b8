"""Which classroom models are bundled, where their files are, and the config of the random model that stands in
while a file is absent. Plain Python (no torch): the command line checks `--stage` against these before the
window paints (config_only.py); loading them is bundled.py."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from attnlab.engine.config import Architecture, ModelConfig

BUNDLED = {
    "translation": "English -> French translation (encoder-decoder)",
    "language": "next-word prediction (decoder-only)",
}
SMALL: dict[str, Any] = dict(d_model=128, n_heads=4, d_ff=512, n_encoder_layers=3, n_decoder_layers=3)


def bundled_path(name: str) -> Path:
    return Path(str(resources.files("attnlab.resources").joinpath(f"{name}.safetensors")))


def stand_in_config(name: str) -> ModelConfig:
    """The config of the random model that stands in for bundled model `name` while its file is absent."""
    arch: Architecture = "decoder-only" if name == "language" else "encoder-decoder"
    return ModelConfig(arch=arch, **SMALL)
