"""The adapter-strength option's parts (option_specs.ADAPTER_STRENGTH): its control, flag and lesson key, where a
strength change starts, why the control is unavailable, and why a strength departs from training. Qt-free and
torch-free (the option table is read by `attnlab models`, which needs no torch)."""

from __future__ import annotations

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.option_parts import SHAPE
from attnlab.engine.option_spec import CliFlag, Control, LessonKey, RunFacts
from attnlab.engine.options import RunOptions, adapter_strength_problems

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


CONTROL = Control(
    "adapter_strength",
    "adapterStrengthSpin",
    "slider",
    SHAPE,
    "Adapter strength",
    "W + s·ΔW for the LoRA adapter's weights: 0 the base model, 1 the fine-tuned one, beyond: more of it",
    unavailable=unavailable,
    written=lambda o, _c, s: o.replace(adapter_strength=round(s, 2)),
    settings={
        "minimum": -1.0,
        "maximum": 3.0,
        "singleStep": 0.1,
        "decimals": 2,
        "value": 1.0,
        "scale": 100,
        "slider": "adapterStrengthSlider",
    },
)
FLAG = CliFlag(
    "--adapter-strength",
    {
        "type": float,
        "default": 1.0,
        "help": "a LoRA adapter's strength s, W + s·ΔW: 0 the base model, 1 the fine-tuned one (-1 to 3)",
    },
    lambda o, s: o.replace(adapter_strength=s),
)
LESSON = LessonKey(
    "adapter_strength",
    (float, int),
    lambda s: next(iter(adapter_strength_problems(s)), None),
    lambda o, s: o.replace(adapter_strength=float(s)),
)
