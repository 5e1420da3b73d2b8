"""A LoRA adapter folder (peft's adapter_config.json + adapter_model.safetensors) opened on its base model (issue 35).

The base is `base_model_name_or_path`: a folder (as written, or beside the adapter folder) or a model id in the
Hugging Face cache. Each adapted module's ΔW = scaling · B · A is computed as peft computes it
(peft/tuners/lora/layer.py: scaling = lora_alpha / r, or lora_alpha / √r with use_rslora; the product transposed
when fan_in_fan_out; r and alpha per module from rank_pattern / alpha_pattern), and `modules_to_save` tensors
replace the base's (ΔW = saved − base). The Hugging Face ΔW are laid onto attnlab's parameters by the base
family's own converter (checkpoints/hf/*.py), run once on zeros + ΔW: whatever it slices, fuses or transposes
(GPT-2's c_attn into W_Q, W_K, W_V) it does to ΔW too. The model runs W + s·ΔW at the adapter strength s
(engine/adapter.py). Pickled adapter_model.bin is never read. Any problem: one CheckpointError line.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import torch

from attnlab.checkpoints.adapters_read import ADAPTER_CONFIG, read_adapter_config, read_adapter_tensors
from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf_cache import NotCached, model_spec, resolve_cached
from attnlab.engine.adapter import AdapterWeights, LoraFactors, first_adapted
from attnlab.engine.live import LiveModel
from attnlab.engine.output_budget import memory_refusal
from attnlab.engine.runcache import sites_in_run_order

PREFIX = "base_model.model."  # peft's saved keys: base_model.model.<module>.lora_A.weight (save_and_load.py)
LORA_SUFFIXES = {".lora_A.weight": "a", ".lora_B.weight": "b"}


def is_adapter_folder(path: Path) -> bool:
    return path.is_dir() and (path / ADAPTER_CONFIG).is_file()


def _fail(folder: Path, why: str) -> CheckpointError:
    return CheckpointError(f"Cannot open the LoRA adapter {str(folder)!r}: {why}")


def base_folder(folder: Path, settings: dict[str, Any]) -> Path:
    """The base model's folder: base_model_name_or_path as a folder, one beside the adapter, or a cached id."""
    name = settings.get("base_model_name_or_path")
    if not isinstance(name, str) or not name.strip():
        raise _fail(folder, "adapter_config.json names no base model (base_model_name_or_path)")
    candidates = [Path(name).expanduser(), folder / name]
    found = next((c for c in candidates if c.is_dir()), None)
    if found is None and model_spec(name) is not None:
        try:
            found = resolve_cached(name)
        except NotCached as e:
            raise _fail(
                folder, f"its base model {name!r} is not a folder here nor in the Hugging Face cache ({e})"
            ) from None
    if found is None:
        raise _fail(folder, f"its base model {name!r} is not a folder here nor a model id in the Hugging Face cache")
    if is_adapter_folder(found):
        raise _fail(folder, f"its base model {name!r} is itself a LoRA adapter; open a full model as the base")
    if not (found / "config.json").is_file():
        raise _fail(folder, f"its base model {name!r} has no config.json (attnlab opens Hugging Face folders as bases)")
    return found


def _pattern(patterns: dict[str, Any], module: str, default: Any) -> Any:
    """peft's get_pattern_key (utils/other.py): the first key K with module matching (.*\\.)?K$."""
    for key, value in patterns.items():
        if re.match(rf"(.*\.)?({key})$", module):
            return value
    return default


def lora_factors(folder: Path, settings: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, LoraFactors]:
    """Each adapted module's A, B and scaling, checked against the config's rank."""
    parts: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        suffix = next((s for s in LORA_SUFFIXES if key.endswith(s)), None)
        if suffix is not None and key.startswith(PREFIX):
            parts.setdefault(key[len(PREFIX) : -len(suffix)], {})[LORA_SUFFIXES[suffix]] = tensor
    found: dict[str, LoraFactors] = {}
    for module, ab in parts.items():
        if set(ab) != {"a", "b"}:
            raise _fail(
                folder, f"{module} has lora_{'A' if 'a' in ab else 'B'} but no lora_{'B' if 'a' in ab else 'A'}"
            )
        a, b = ab["a"].float(), ab["b"].float()  # [r, in], [out, r]
        r = int(_pattern(settings.get("rank_pattern") or {}, module, settings["r"]))
        if a.dim() != 2 or b.dim() != 2 or a.shape[0] != r or b.shape[1] != r:
            raise _fail(
                folder,
                f"{module}'s lora_A {tuple(a.shape)} and lora_B {tuple(b.shape)} do not have the rank r = {r} "
                "adapter_config.json gives it",
            )
        alpha = float(_pattern(settings.get("alpha_pattern") or {}, module, settings["lora_alpha"]))
        rslora = bool(settings.get("use_rslora", False))
        scaling = alpha / math.sqrt(r) if rslora else alpha / r
        fan = bool(settings.get("fan_in_fan_out", False))
        found[module] = LoraFactors(module, a, b, scaling, alpha, rslora, fan)
    return found


def hf_deltas(
    folder: Path, factors: dict[str, LoraFactors], tensors: dict[str, torch.Tensor], base: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """ΔW by the base's Hugging Face tensor name: the LoRA products, and saved modules minus the base's."""
    out: dict[str, torch.Tensor] = {}
    for module, f in factors.items():
        name = module + ".weight"
        if name not in base:
            raise _fail(folder, f"it adapts {module}, which the base model lacks")
        delta = f.delta()
        if tuple(delta.shape) != tuple(base[name].shape):
            raise _fail(
                folder,
                f"{module}'s ΔW is {tuple(delta.shape)} but the base's weight is {tuple(base[name].shape)}"
                + (" (check fan_in_fan_out)" if tuple(delta.shape[::-1]) == tuple(base[name].shape) else ""),
            )
        out[name] = delta
    for key, tensor in tensors.items():  # modules_to_save: whole tensors saved as base_model.model.<name>
        if not key.startswith(PREFIX) or any(key.endswith(s) for s in LORA_SUFFIXES):
            continue
        name = key[len(PREFIX) :]
        if name not in base:
            raise _fail(folder, f"it saves {name}, which the base model lacks")
        if tuple(tensor.shape) != tuple(base[name].shape):
            raise _fail(folder, f"it saves {name} as {tuple(tensor.shape)}, the base holds {tuple(base[name].shape)}")
        out[name] = tensor.float() - base[name].float()
    return out


# ΔW in float32 held at once while they are laid onto attnlab's parameters: the Hugging Face ΔW, the converter's
# output on zeros + ΔW, and the differences kept (attnlab_deltas)
DELTA_COPIES = 3


def deltas_refusal(
    folder: Path, factors: dict[str, LoraFactors], tensors: dict[str, torch.Tensor], base: dict[str, torch.Tensor]
) -> str:
    """Why the adapter's ΔW cannot be computed in the memory there is (empty: they fit): DELTA_COPIES float32
    copies of every adapted weight and saved module, counted from the base's shapes before any is made."""
    saved = [k[len(PREFIX) :] for k in tensors if k.startswith(PREFIX) and not k.endswith(tuple(LORA_SUFFIXES))]
    adapted = [m + ".weight" for m in factors] + saved
    floats = sum(base[n].numel() for n in adapted if n in base)
    return memory_refusal(f"merging its ΔW in float32 ({len(adapted)} weights)", DELTA_COPIES * 4 * floats)


def attnlab_deltas(hf_config: dict, base: dict[str, torch.Tensor], deltas: dict[str, torch.Tensor]) -> dict:
    """ΔW on attnlab's parameters: the family converter run on zeros + ΔW, minus its run on zeros (exact for
    the slicing, fusing and transposing converters do; stride-0 zeros cost no memory)."""
    from attnlab.checkpoints.hf import convert

    zeros = {n: torch.zeros((), dtype=torch.float32).expand(t.shape) for n, t in base.items()}
    _c, with_delta, _n = convert(hf_config, {**zeros, **deltas})
    _c, without, _n = convert(hf_config, zeros)
    out = {}
    for name, t in with_delta.items():
        d = t.float() - without[name].float() if name in without else t.float()
        if bool(d.any()):
            out[name] = d.contiguous()
    return out


def load_adapter_folder(
    folder: Path, device: str = "cpu", tokenizer: Any = None, dtype: str | None = None
) -> LiveModel:
    """The base model with the adapter attached at strength 1 (RunOptions.adapter_strength sets it per run)."""
    from attnlab.checkpoints.errors import Problems
    from attnlab.checkpoints.hf_folder import load_hf_folder, read_folder_weights
    from attnlab.checkpoints.tokenizer_files import read_json_file

    settings = read_adapter_config(folder)
    tensors = read_adapter_tensors(folder)
    factors = lora_factors(folder, settings, tensors)
    base_dir = base_folder(folder, settings)
    model = load_hf_folder(base_dir, device=device, tokenizer=tokenizer, dtype=dtype)
    problems = Problems(base_dir)
    hf_config = read_json_file(base_dir / "config.json", problems)
    base = read_folder_weights(base_dir, problems)
    problems.raise_if_any()
    too_big = deltas_refusal(folder, factors, tensors, base)
    if too_big:  # before a single ΔW is computed
        raise _fail(folder, too_big)
    deltas = attnlab_deltas(hf_config, base, hf_deltas(folder, factors, tensors, base))
    if not deltas:
        raise _fail(folder, "it changes no weight of the base model (every ΔW is zero)")
    layer_order = list(dict.fromkeys(s.rsplit(".", 1)[0] for s in sites_in_run_order(model.config)))
    adapted_from = first_adapted(layer_order, list(deltas))
    rank = sorted({f.rank for f in factors.values()})
    what = f"LoRA adapter {folder.name} (r = {'/'.join(map(str, rank)) or '–'}, {len(factors)} modules) on {model.name}"
    adapter = AdapterWeights(deltas, factors, description=what, confined=adapted_from != "all")
    adapter.attach(model.module)
    model.module.config = dataclasses.replace(model.module.config, adapted_from=adapted_from)
    model.adapter = adapter
    model.name = f"{folder.name} (LoRA on {model.name})"
    model.metadata["source"] = what
    model.metadata["adapter"] = {"folder": str(folder), "base": str(base_dir), "modules": list(factors)}
    said = (
        f"{what}: the Adapter strength control (--adapter-strength) runs W + s·ΔW, 0 the base model, 1 the fine-tune."
    )
    model.metadata["notice"] = " ".join(n for n in (model.metadata.get("notice", ""), said) if n)
    return model
