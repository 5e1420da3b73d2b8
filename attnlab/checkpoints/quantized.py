"""Quantized Hugging Face folders (config.json `quantization_config`): bitsandbytes 4-bit (nf4, fp4, with or
without double quantization) and 8-bit (LLM.int8) weights are dequantized on load by the format's own formulas
(quantized_bnb.py); GPTQ, AWQ and every other method are refused in one line naming the method.

What was done is one provenance fact, `LiveModel.metadata["quantization"]` (QUANTIZATION_KEY):
    {"method": "bitsandbytes", "scheme": "nf4", "bits_per_weight": 4.13, "double_quantization": true,
     "block_size": 64, "weights": 14, "dequantized_to": "float32", "folder": "…", "text": "dequantized from …"}
`text` is the sentence the banner and Model info show. The quantization stage (present/quantization.py) reads a
weight's packed codes and block scales again from `folder`, and the full-precision original, when there is one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnlab.checkpoints import quantized_bnb as bnb
from attnlab.checkpoints import quantized_gptq as gptq
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.file_checks import has_file
from attnlab.checkpoints.quantized_methods import METHOD_NAMES, quant_method
from attnlab.engine.memory import weights_refusal
from attnlab.engine.output_budget import memory_refusal
from attnlab.engine.precision import DTYPES, dtype_name

QUANTIZATION_KEY = "quantization"  # LiveModel.metadata: how the weights were stored before they were dequantized


@dataclass(frozen=True)
class Dequantization:
    """What was done to a folder's weights on load (the fact `fact()` stores)."""

    method: str  # "bitsandbytes", "GPTQ", "AWQ"
    scheme: str  # "nf4", "fp4", "int8", "4-bit", or several joined by " + "
    bits: float  # bits the folder spends per quantized weight, codes and scales together
    nested: bool  # double quantization (bitsandbytes 4-bit)
    blocksize: int  # weights per scale (4-bit) or group (GPTQ / AWQ); 0 for int8 (one scale a row)
    act_order: bool  # GPTQ's groups in another order than the inputs'
    weights: int  # how many weights were quantized
    to: str  # the dtype they were dequantized to

    def text(self) -> str:
        name = "LLM.int8" if self.scheme == "int8" else self.scheme
        extra = [f"group size {self.blocksize}"] if self.method != "bitsandbytes" else []
        extra += ["double quantization"] * self.nested + ["act-order"] * self.act_order
        said = "".join(", " + e for e in extra)
        return f"dequantized from {self.method} {name} ({self.bits:.3g} bits per weight{said}) to {self.to}"

    def fact(self, folder: Path) -> dict[str, Any]:
        return {
            "method": self.method,
            "scheme": self.scheme,
            "bits_per_weight": round(self.bits, 3),
            "double_quantization": self.nested,
            "block_size": self.blocksize,
            "act_order": self.act_order,
            "weights": self.weights,
            "dequantized_to": self.to,
            "folder": str(folder),
            "text": self.text(),
        }


def target_dtype(requested: str | None) -> torch.dtype:
    """What dequantized weights are held in: float32, unless the person asked for another precision."""
    return DTYPES.get(requested or "", torch.float32)


def read_packed(
    state: dict[str, torch.Tensor], hf_config: dict[str, Any] | None
) -> tuple[str, list[bnb.Packed], list[str], set[str]]:
    """(the method's name, its quantized weights, one line per weight that cannot be read, every key they use)."""
    method = quant_method(hf_config or {})
    if method in ("gptq", "awq"):
        assert hf_config is not None
        packed, bad = gptq.read_all_grouped(state, method, hf_config["quantization_config"])
        keys = {k for p in packed for k in gptq.grouped_keys(p.name.removesuffix("weight"), state)}
        return METHOD_NAMES[method], packed, bad, keys
    packed, bad = bnb.read_all(state)
    return "bitsandbytes", packed, bad, {k for p in packed for k in bnb.quantized_keys(p.name, state)}


def dequantize_state(
    state: dict[str, torch.Tensor],
    problems: Problems,
    dtype: str | None = None,
    hf_config: dict[str, Any] | None = None,
) -> tuple[dict[str, torch.Tensor], Dequantization | None]:
    """(the state dict with every quantized weight replaced by its values, what was done); every problem is
    added to `problems` (nothing is computed then). A state without quantized weights comes back as it is.
    `hf_config`: the folder's config.json (GPTQ and AWQ say their bits and groups there; bitsandbytes beside
    each weight)."""
    method, packed, bad, quantized = read_packed(state, hf_config)
    for line in bad[:5]:
        problems.add(f"a {method} weight cannot be read: {line}")
    if len(bad) > 5:
        problems.add(f"… and {len(bad) - 5} more {method} weights cannot be read")
    if bad or not packed:
        return state, None
    held = target_dtype(dtype)
    plain = sum(t.numel() for k, t in state.items() if k not in quantized and t.is_floating_point())
    too_big = weights_refusal(plain + sum(p.numel for p in packed), held, torch.device("cpu"))
    too_big = too_big or _transient_refusal(plain + sum(p.numel for p in packed), held, packed)
    if too_big:  # before a single value is dequantized
        problems.add(f"dequantized, {too_big}")
        return state, None
    out = {k: t for k, t in state.items() if k not in quantized}
    for p in packed:
        out[p.name] = bnb.dequantized(p).to(held)  # one weight at a time: float32 only while it is computed
    return out, _record(method, packed, dtype_name(held))


def _transient_refusal(n_values: int, held: torch.dtype, packed: list[bnb.Packed]) -> str:
    """Why the weights held in `held` and, while it is computed, the largest packed weight in float32 (bitsandbytes
    dequantizes to float32; quantized_bnb.dequantized) cannot fit (empty: they fit, or `held` is float32)."""
    if held == torch.float32:
        return ""
    largest = max(p.numel for p in packed)
    element = torch.empty((), dtype=held).element_size()
    what = f"the weights in {dtype_name(held)} and, while it is computed, the largest ({largest:,} values) in float32"
    return memory_refusal(what, n_values * element + 4 * largest)


def _record(method: str, packed: list[bnb.Packed], to: str) -> Dequantization:
    total = sum(p.numel for p in packed)
    schemes = sorted({p.scheme for p in packed})
    return Dequantization(
        method=method,
        scheme=" + ".join(schemes),
        bits=sum(p.bits * p.numel for p in packed) / total,
        nested=any(p.nested for p in packed),
        blocksize=max((p.blocksize for p in packed if p.scheme != "int8"), default=0),
        act_order=any(p.groups is not None and bool((p.groups[1:] < p.groups[:-1]).any()) for p in packed),
        weights=len(packed),
        to=to,
    )


# ---- one weight again, for the quantization stage ------------------------------------------------------------
def folder_tensors(folder: str | os.PathLike[str], keys: list[str]) -> dict[str, torch.Tensor]:
    """The tensors `keys` of a Hugging Face folder's safetensors weights (model.safetensors, or the shards its
    index names), read alone; the keys it lacks are left out. ValueError (one line) for a folder without them."""
    from safetensors import safe_open

    from attnlab.bounded_read import MAX_INDEX_BYTES, confined, read_json
    from attnlab.checkpoints.header import read_layout

    root = Path(folder)
    index = root / "model.safetensors.index.json"
    if has_file(root, index.name):
        weight_map = read_json(confined(root, index.name, index.name), index.name, MAX_INDEX_BYTES)
        weight_map = weight_map.get("weight_map", {}) if isinstance(weight_map, dict) else {}
        where = {k: str(weight_map[k]) for k in keys if k in weight_map}
    elif has_file(root, "model.safetensors"):
        where = dict.fromkeys(keys, "model.safetensors")
    else:
        raise ValueError(f"{root} has no safetensors weights (model.safetensors or its index)")
    out: dict[str, torch.Tensor] = {}
    for file in sorted(set(where.values())):
        problems = Problems(root / file)
        layout = read_layout(confined(root, file, file), problems)
        if layout is None or not layout.complete:
            raise ValueError(f"{file}: {problems.items[0] if problems.items else 'its header cannot be read'}")
        with safe_open(str(root / file), framework="pt", device="cpu") as f:
            for key in (k for k, v in where.items() if v == file and k in layout.entries):
                out[key] = f.get_tensor(key)
    return out


def packed_weight(folder: str | os.PathLike[str], name: str) -> bnb.Packed:
    """The quantized weight `name` of the quantized folder, as stored (codes, block scales, levels or zeros)."""
    from attnlab.checkpoints.tokenizer_files import read_json_file

    root = Path(folder)
    config = read_json_file(root / "config.json", Problems(root))
    module = name.removesuffix("weight")
    method = quant_method(config)
    if method in ("gptq", "awq"):
        state = folder_tensors(root, [module + s for s in ("qweight", "qzeros", "scales", "g_idx")])
        return gptq.read_grouped(module, state, method, config["quantization_config"])
    wanted = [
        name,
        *(name + s for s in (".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map")),
        *(name + bnb.STATE_SUFFIX + t for t in bnb.FOUR_BIT_TYPES),
        *(module + s for s in ("SCB", "weight_format")),
    ]
    packed, bad = bnb.read_all(folder_tensors(root, wanted))
    if bad or not packed:
        raise ValueError(bad[0] if bad else f"{name} is not a quantized weight of {folder}")
    return packed[0]


def quantized_names(folder: str | os.PathLike[str]) -> list[str]:
    """The weights of a quantized folder that are stored quantized, in the order of its files' headers."""
    from attnlab.checkpoints.header import read_layout

    root = Path(folder)
    names: list[str] = []
    for file in sorted(p.name for p in root.glob("*.safetensors")):
        layout = read_layout(root / file, Problems(root / file))
        if layout is None:
            continue
        entries = dict.fromkeys(layout.entries)
        names += [k.split(".quant_state.", 1)[0] for k in entries if bnb.STATE_SUFFIX in k]
        names += [k.removesuffix("SCB") + "weight" for k in entries if k.endswith(".SCB")]
        names += [k.removesuffix("qweight") + "weight" for k in entries if k.endswith(".qweight")]
    return sorted(names, key=_natural)


def _natural(name: str) -> tuple:
    """Layer 10 after layer 9."""
    return tuple(int(part) if part.isdigit() else part for part in name.split("."))


def original_folder(quantized: dict[str, Any], given: str | os.PathLike[str] | None = None) -> Path | None:
    """The full-precision model a quantized one was made from: `given` (a folder or a cached id), else the
    config.json's `_name_or_path` when it is a folder, or a model id in the Hugging Face cache, that holds a
    model that is not quantized itself; None when there is none at hand."""
    from attnlab.checkpoints.hf_cache import NotCached, model_spec, resolve_cached, resolve_model
    from attnlab.checkpoints.tokenizer_files import read_json_file

    if given is not None:
        return resolve_model(given)
    base = quantized.get("_name_or_path")
    if not isinstance(base, str) or not base:
        return None
    folder = Path(base).expanduser()
    if not folder.is_dir():
        if model_spec(base) is None:
            return None
        try:
            folder = resolve_cached(base)
        except NotCached:
            return None
    problems = Problems(folder)
    config = read_json_file(folder / "config.json", problems)
    plain = (folder / "config.json").is_file() and not problems and quant_method(config) is None
    return folder if plain else None
