"""Checkpoints: the native .safetensors format (docs/checkpoint-format.md), safe .pt loading, the bundled
classroom models and random ones. No Qt here."""

from attnlab.checkpoints.bundled import BUNDLED, default_tokenizer, load_bundled, random_model
from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.loader import load_checkpoint
from attnlab.checkpoints.native import save_checkpoint

__all__ = [
    "BUNDLED",
    "CheckpointError",
    "default_tokenizer",
    "load_bundled",
    "load_checkpoint",
    "random_model",
    "save_checkpoint",
]
