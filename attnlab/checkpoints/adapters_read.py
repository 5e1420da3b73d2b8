"""Reading a LoRA adapter folder's two files, checked before anything is computed (checkpoints/adapters.py):
adapter_config.json (peft's LoraConfig as saved) and adapter_model.safetensors (through the checked shard reader;
a pickled adapter_model.bin is refused, never unpickled). Every problem: one CheckpointError line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from attnlab.checkpoints.errors import CheckpointError, Problems

ADAPTER_CONFIG, ADAPTER_WEIGHTS, ADAPTER_PICKLE = (
    "adapter_config.json",
    "adapter_model.safetensors",
    "adapter_model.bin",
)
# LoraConfig settings attnlab does not compute, with what they would need
UNSUPPORTED = {
    "use_dora": "DoRA (use_dora) rescales each column by a learned magnitude",
    "lora_bias": "lora_bias adds a trained bias to lora_B",
    "use_qalora": "QA-LoRA (use_qalora) pools the input",
    "trainable_token_indices": "trainable_token_indices change single rows of an embedding",
}


def _fail(folder: Path, why: str) -> CheckpointError:
    return CheckpointError(f"Cannot open the LoRA adapter {str(folder)!r}: {why}")


def _number(value: Any) -> bool:
    """A finite int or float (JSON's NaN and Infinity, which Python reads, would scale ΔW to NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_adapter_config(folder: Path) -> dict[str, Any]:
    """adapter_config.json, checked: a LoRA adapter with a positive whole rank and a numeric alpha."""
    from attnlab.checkpoints.tokenizer_files import read_json_file

    problems = Problems(folder)
    settings = read_json_file(folder / ADAPTER_CONFIG, problems)
    if problems:
        raise _fail(folder, problems.items[0])
    kind = settings.get("peft_type", "LORA")
    if kind != "LORA":
        raise _fail(folder, f"adapter_config.json's peft_type is {kind!r}; attnlab opens LoRA adapters (LORA)")
    r = settings.get("r")
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise _fail(folder, f"adapter_config.json's rank r must be a whole number of at least 1, not {r!r}")
    if not _number(settings.get("lora_alpha")):
        raise _fail(
            folder, f"adapter_config.json's lora_alpha must be a finite number, not {settings.get('lora_alpha')!r}"
        )
    for key, pattern in (
        ("rank_pattern", settings.get("rank_pattern")),
        ("alpha_pattern", settings.get("alpha_pattern")),
    ):
        if pattern is not None and not (
            isinstance(pattern, dict) and all(_number(v) and v > 0 for v in pattern.values())
        ):
            raise _fail(folder, f"adapter_config.json's {key} must map module names to positive numbers")
    for key, why in UNSUPPORTED.items():
        if settings.get(key):
            raise _fail(folder, f"{why}; attnlab computes plain LoRA (W + scaling·B·A) only")
    return settings


def read_adapter_tensors(folder: Path) -> dict[str, torch.Tensor]:
    """adapter_model.safetensors' tensors (headers checked first); a pickled adapter_model.bin is refused."""
    from attnlab.checkpoints.hf_folder import read_safetensors_shards

    if not (folder / ADAPTER_WEIGHTS).is_file():
        pickled = (folder / ADAPTER_PICKLE).exists()
        raise _fail(
            folder,
            f"it has no {ADAPTER_WEIGHTS}"
            + (
                f" ({ADAPTER_PICKLE} is a pickle attnlab never unpickles: save the adapter with safetensors)"
                if pickled
                else ""
            ),
        )
    problems = Problems(folder)
    tensors = read_safetensors_shards(folder, {ADAPTER_WEIGHTS: None}, problems)
    if problems:
        raise _fail(folder, problems.items[0])
    if not tensors:
        raise _fail(folder, f"{ADAPTER_WEIGHTS} holds no tensors")
    bad = [name for name, t in tensors.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
    if bad:
        raise _fail(folder, f"{ADAPTER_WEIGHTS} holds NaN or infinite values ({', '.join(sorted(bad)[:3])})")
    return dict(tensors)
