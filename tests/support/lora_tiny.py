"""Tiny LoRA adapters written by peft itself on tiny random transformers models (never downloaded): the base
saved as a Hugging Face folder, the adapter beside it (adapter_config.json + adapter_model.safetensors), and
peft's merged model (`merge_and_unload()`) as the reference. Used by tests/checkpoints/test_lora_adapters.py."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.support import hf_tiny


def _randomize_lora(model: torch.nn.Module) -> None:
    """peft starts lora_B at zero (ΔW = 0); a trained adapter's B is not: draw A and B at random."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name or "modules_to_save" in name:  # a saved module starts as the base's copy
                p.normal_(0.0, 0.3)


def write_adapter(tmp: Path, family: str, **lora: object) -> tuple[Path, Path, torch.nn.Module]:
    """(base folder, adapter folder, peft's merged model) for `family` ("gpt2" or "llama") and LoraConfig `lora`."""
    from peft import LoraConfig, get_peft_model

    base_model, _config = getattr(hf_tiny, family)()
    base_dir, adapter_dir = tmp / f"{family}-base", tmp / f"{family}-lora"
    base_model.save_pretrained(base_dir, safe_serialization=True)
    peft_model = get_peft_model(base_model, LoraConfig(**lora))  # type: ignore[arg-type]
    _randomize_lora(peft_model)
    peft_model.save_pretrained(adapter_dir, safe_serialization=True)
    set_base(adapter_dir, str(base_dir))
    merged = peft_model.merge_and_unload().eval()
    return base_dir, adapter_dir, merged


def set_base(adapter_dir: Path, base: str | None) -> None:
    """Rewrite adapter_config.json's base_model_name_or_path (None: remove it)."""
    path = adapter_dir / "adapter_config.json"
    settings = json.loads(path.read_text())
    if base is None:
        settings.pop("base_model_name_or_path", None)
    else:
        settings["base_model_name_or_path"] = base
    path.write_text(json.dumps(settings))


def hf_logits(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    """The transformers model's logits for one sentence of ids.  [T, V]"""
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()
