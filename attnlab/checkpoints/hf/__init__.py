"""Hugging Face models mapped onto attnlab's own engine: config.json -> ModelConfig, HF tensor names ->
attnlab's (docs/checkpoint-format.md has the tables). No `transformers` needed: only the config dict and
the tensors.

    config = config_from_hf(hf_config)                      # before any weight is read (shapes, sizes)
    config, state, notes = convert(hf_config, state_dict)   # Transformer(config).load_state_dict(state)

One module per family: `FAMILIES` (common.py) maps each `model_type` to its module (README.md's table and
docs/checkpoint-format.md list them; tests/families/test_family_lists.py keeps the three in step), each with
`config_from_hf(hf) -> (ModelConfig, notes)` and
`convert_tensors(hf, config, tensors) -> (state dict, notes)`; a family whose config depends on which tensors
are present (BERT's masked-LM head: config_from_hf guesses it from `architectures`) also has
`config_for_weights(hf, config, tensors) -> config`, so `convert` is the final word. Anything attnlab cannot
represent exactly raises CheckpointError naming the config.json field and listing SUPPORTED_MODEL_TYPES.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf.common import FAMILIES, NOT_RUNNABLE, SUPPORTED_MODEL_TYPES, refuse
from attnlab.engine.config import ModelConfig

if TYPE_CHECKING:
    import torch

__all__ = ["NOT_RUNNABLE", "SUPPORTED_MODEL_TYPES", "config_and_notes", "config_from_hf", "convert"]


def _family(hf_config: Mapping) -> ModuleType:
    if not isinstance(hf_config, Mapping):
        raise CheckpointError(f"config.json must hold a JSON object, not {type(hf_config).__name__}")
    model_type = hf_config.get("model_type")
    if isinstance(model_type, str) and model_type in NOT_RUNNABLE:
        raise refuse("model_type", f"{model_type!r}: {NOT_RUNNABLE[model_type]}")
    if model_type not in FAMILIES:
        what = "is missing" if model_type is None else f"{model_type!r} is not a model type attnlab can open"
        raise refuse("model_type", what, list_types=True)
    return importlib.import_module(f"attnlab.checkpoints.hf.{FAMILIES[model_type]}")


def config_and_notes(hf_config: Mapping) -> tuple[ModelConfig, list[str]]:
    """The attnlab ModelConfig a config.json describes, and notes on every setting that was inferred."""
    config, notes = _family(hf_config).config_from_hf(hf_config)
    problems = config.problems()
    if problems:
        raise CheckpointError("config.json describes a model attnlab cannot build: " + "; ".join(problems))
    return config, notes


def config_from_hf(hf_config: Mapping) -> ModelConfig:
    """The attnlab ModelConfig a config.json describes (raises CheckpointError when it cannot)."""
    return config_and_notes(hf_config)[0]


def convert(
    hf_config: Mapping, state_dict: Mapping[str, torch.Tensor]
) -> tuple[ModelConfig, dict[str, torch.Tensor], list[str]]:
    """(attnlab config, attnlab-named float32 state dict for Transformer.load_state_dict, notes)."""
    family = _family(hf_config)
    config, notes = config_and_notes(hf_config)
    refine = getattr(family, "config_for_weights", None)  # settings only the weights can tell (an MLM head)
    if refine is not None:
        config = refine(hf_config, config, state_dict)
    state, more = family.convert_tensors(hf_config, config, state_dict)
    return config, state, notes + more
