"""The adapter-strength option's parts (option_specs.ADAPTER_STRENGTH): where a strength change starts, why the
control is unavailable, and why a strength departs from training. Qt-free and torch-free (the option table is
read by `attnlab models`, which needs no torch)."""

from __future__ import annotations

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.option_spec import RunFacts
from attnlab.engine.options import RunOptions, adapter_strength_problems

strength_problems = adapter_strength_problems  # the lesson key's check (RunOptions.problems says the same)

NO_ADAPTER = "No LoRA adapter is open: open an adapter folder (adapter_config.json + adapter_model.safetensors)"
STACK_ORDER = {"enc": 0, "dec": 1}  # a forward pass runs the encoder's layers before the decoder's


def _run_position(layer_name: str) -> tuple[int, int]:
    stack, _, index = layer_name.partition(".")
    return STACK_ORDER[stack], int(index)


def site_changed_in(config: ModelConfig, before: RunOptions, after: RunOptions, site: str) -> bool:
    """Whether a strength change reaches attention site `site`: every site from the first adapted layer on."""
    if before.adapter_strength == after.adapter_strength or not config.adapted_from:
        return False
    if config.adapted_from == "all":  # an embedding changes: everything does
        return True
    layer_name = names.layer_of(site)
    return layer_name is not None and _run_position(layer_name) >= _run_position(config.adapted_from)


def unavailable(config: ModelConfig, _options: RunOptions) -> str | None:
    return None if config.adapted_from else NO_ADAPTER


def departs(config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    """Strength 0 is the base model and 1 the fine-tuned one, each as trained; any other strength is neither."""
    s = options.adapter_strength
    if not config.adapted_from or s in (0, 1):
        return []
    where = "between the base model (0) and the fine-tuned one (1)" if 0 < s < 1 else "beyond the fine-tune"
    return [f"the LoRA adapter is at strength {s:g}: W + {s:g}·ΔW lies {where}, a model nobody trained"]
