"""A GGUF file (llama.cpp, Ollama) opened as a model: its layout checked first (gguf_layout.py), its metadata read as
a config.json and its tensor names as transformers' (gguf_arch.py), its tokenizer built from the metadata
(gguf_tokenizer.py); then the Hugging Face family converters (checkpoints/hf/) and build_live_model do the rest, as
for a Hugging Face folder.

The tensors stay in the memory-mapped file (np.memmap, as gguf.GGUFReader maps it) until a converter takes one:
only then is it dequantized, by the gguf package's own formulas (gguf.quants.dequantize), a few rows at a time,
straight into the dtype the weights are held in; the mapped pages it was read from are handed back. The weights'
dequantized size is checked against the memory before the first one is dequantized.
"""

from __future__ import annotations

import mmap
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnlab.checkpoints.errors import CheckpointError, Problems, name_list
from attnlab.checkpoints.gguf_arch import architecture, changes_values, hf_config, hf_name, processor
from attnlab.checkpoints.gguf_layout import GgufLayout, TensorInfo, read_gguf_layout, type_sizes
from attnlab.engine.live import LiveModel, pick_device
from attnlab.engine.memory import weights_refusal
from attnlab.engine.precision import DTYPES
from attnlab.engine.tokenizer import Tokenizer

CHUNK_VALUES = 1 << 22  # values dequantized at once (16 MB of float32): the temporaries stay small
FLOAT_TYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
ROPE_FREQS = "rope_freqs.weight"  # Llama 3's rope scaling, kept by llama.cpp as its factors (gguf_arch.llama3_rope)


def quantization_fact(layout: GgufLayout, held: torch.dtype) -> dict[str, Any]:
    """What was done to the weights, as the one provenance fact every quantized reader writes
    (checkpoints/quantized.py QUANTIZATION_KEY): method, scheme, bits per weight, the dtype held and its phrase,
    e.g. "dequantized from Q4_1 (5.0 bits per weight) to float32"."""
    sizes = type_sizes()
    values: dict[str, int] = {}
    for t in layout.tensors:
        values[sizes[t.type_id][0]] = values.get(sizes[t.type_id][0], 0) + t.numel
    total = sum(t.numel for t in layout.tensors) or 1
    bits = 8 * sum(t.nbytes for t in layout.tensors) / total
    main = max(values, key=lambda k: values[k]) if values else "F32"
    others = sorted(k for k in values if k != main)
    how = f"{bits:.3g} bits per weight" + (f" on average; also {', '.join(others)}" if others else "")
    held_name = str(held).removeprefix("torch.")
    if all(k in FLOAT_TYPES or k == "F64" for k in values):  # nothing quantized
        text = f"read from {main} ({how}) as {held_name}"
    else:
        text = f"dequantized from {main} ({how}) to {held_name}"
    return {"method": "gguf", "scheme": main, "bits_per_weight": bits, "dequantized_to": held_name, "text": text}


def stored_dtype(layout: GgufLayout) -> torch.dtype:
    """The dtype the weights are held in when none is asked for: float32, or F16 / BF16 when the file holds
    nothing narrower (nothing quantized)."""
    names = {type_sizes()[t.type_id][0] for t in layout.tensors if len(t.shape) > 1}
    return FLOAT_TYPES[names.pop()] if len(names) == 1 and next(iter(names)) in FLOAT_TYPES else torch.float32


class GgufTensors(Mapping[str, torch.Tensor]):
    """transformers' state-dict names -> the file's tensors, each dequantized the first time it is asked for."""

    def __init__(self, path: Path, arch: str, config: dict[str, Any], names: dict[str, TensorInfo], held: torch.dtype):
        # the file mapped as gguf.GGUFReader maps it (np.memmap, read-only); the tensors' places are gguf_layout's,
        # checked against the file's size (GGUFReader would parse every metadata item again, into numpy views:
        # 6 s for a 32,000-token vocabulary here, and it trusts every count and offset)
        self.map = np.memmap(path, dtype=np.uint8, mode="r")
        self.names, self.held, self.arch = names, held, arch
        self.fix = processor(arch, config)
        self.done: dict[str, torch.Tensor] = {}

    def __getitem__(self, key: str) -> torch.Tensor:
        if key not in self.done:
            info = self.names[key]
            wide = self.held != torch.float32 and changes_values(self.arch, info.name)
            data = self.map[info.start : info.start + info.nbytes]  # the tensor's bytes, still on disk
            t = dequantized(data, info, torch.float32 if wide else self.held)
            t = self.fix(info.name, t)
            # a value computed on (Gemma's norms) stays float32: the converter computes on it again (1 + w) and
            # the weights are rounded to the held dtype once, when they are placed
            self.done[key] = t if t.dtype == self.held or wide else t.to(self.held)
            self.release(info)
        return self.done[key]

    def release(self, info: TensorInfo) -> None:
        """Hand the mapped pages of a dequantized tensor back (they are not needed again)."""
        raw = getattr(self.map, "_mmap", None)
        if raw is None or not hasattr(raw, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
            return
        start = info.start // mmap.PAGESIZE * mmap.PAGESIZE
        end = min(info.start + info.nbytes, len(raw))
        try:
            raw.madvise(mmap.MADV_DONTNEED, start, end - start)
        except (OSError, ValueError):
            pass

    def __contains__(self, key: object) -> bool:  # Mapping's own would dequantize the tensor to answer
        return key in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def dequantized(data: np.ndarray, info: TensorInfo, dtype: torch.dtype) -> torch.Tensor:
    """The tensor's values by gguf.quants.dequantize, a few rows at a time, into a new tensor of `dtype`.
    data: the file's bytes of the tensor, [rows, bytes per row] after the reshape (gguf.quants.dequantize reads F32
    and F16 rows of bytes as their values too)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    qtype = GGMLQuantizationType(info.type_id)
    out = torch.empty(info.shape, dtype=dtype)
    rows_out = out.view(-1, info.shape[-1])  # [rows, values per row]
    rows_in = data.reshape(rows_out.shape[0], -1)
    step = max(1, CHUNK_VALUES // info.shape[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a float tensor's values are read-only views of the map
        for i in range(0, rows_out.shape[0], step):
            block = dequantize(rows_in[i : i + step], qtype)  # [step, values per row], float32
            rows_out[i : i + step].copy_(torch.from_numpy(np.asarray(block)).reshape(-1, info.shape[-1]))
    return out


def dequantizable() -> set[int]:
    """The ggml type ids gguf.quants.dequantize turns into values."""
    from gguf import GGMLQuantizationType
    from gguf.quants import _type_traits

    return {int(GGMLQuantizationType.F32), int(GGMLQuantizationType.F16), *map(int, _type_traits)}


def _mapped_names(layout: GgufLayout, arch: str, problems: Problems) -> dict[str, TensorInfo]:
    names: dict[str, TensorInfo] = {}
    unknown = []
    blocks = layout.metadata.get(f"{arch}.block_count")
    for info in layout.tensors:
        if info.name == ROPE_FREQS:  # read into the config (rope_scaling) by read_plan
            continue
        hf = hf_name(arch, info.name)
        block = info.name.split(".")[1] if info.name.startswith("blk.") else ""
        if hf is None or (isinstance(blocks, int) and block.isdigit() and int(block) >= blocks):  # llama.cpp refuses
            unknown.append(info.name)
        elif info.type_id not in dequantizable():
            problems.add(
                f"tensor {info.name!r} is stored as {type_sizes()[info.type_id][0]}, which gguf cannot dequantize"
            )
        else:
            names[hf] = info
    if unknown:
        problems.add(f"the file has tensors a {arch} model does not have: {name_list(unknown)}")
    return names


def _held(layout: GgufLayout, dtype: str | None, problems: Problems) -> torch.dtype:
    if dtype in (None, "stored"):
        return stored_dtype(layout)
    if dtype not in DTYPES:
        problems.add(f"dtype must be one of stored, {', '.join(DTYPES)} (got {dtype!r})")
        return torch.float32
    return DTYPES[dtype]


def _sources(settings: dict[str, dict[str, Any]], keys: dict[str, str]) -> dict[str, dict[str, Any]]:
    """setting_sources' "config.json (key)" said as what it was read from: "GGUF metadata (llama.key)"."""
    out = {}
    for name, entry in settings.items():
        source = str(entry.get("source", ""))
        if source.startswith("config.json ("):
            hf_key = source.removeprefix("config.json (").removesuffix(")")
            source = f"GGUF metadata ({keys[hf_key]})" if hf_key in keys else "GGUF file"
        out[name] = {**entry, "source": source}
    return out


def _read_rope_freqs(path: Path, info: TensorInfo, arch: str, config: dict[str, Any], problems: Problems) -> None:
    """The file's rope_freqs tensor as the config's rope_scaling (Llama 3), or the reason it cannot be."""
    from attnlab.checkpoints.gguf_arch import llama3_rope

    scaling = None
    if arch in ("llama", "mistral") and type_sizes()[info.type_id][0] == "F32" and info.numel <= 1 << 16:
        with open(path, "rb") as f:
            f.seek(info.start)
            factors = np.frombuffer(f.read(info.nbytes), dtype="<f4").astype(np.float64)
        scaling = llama3_rope(factors, config) if len(factors) == info.numel else None
    if scaling is None:
        problems.add(
            "its rope_freqs tensor (rope scaling factors) matches no Llama 3 rope scaling attnlab computes, so "
            "its positions cannot be turned as the model was trained"
        )
    else:
        config["rope_scaling"] = scaling


def read_plan(path: Path, dtype: str | None, device: str, problems: Problems) -> tuple[Any, ...]:
    """(layout, arch, config dict, tensors by HF name, held dtype): everything checked before anything is
    dequantized; raises CheckpointError with every problem found."""
    from attnlab.checkpoints.hf.common import refusal
    from attnlab.checkpoints.hf_folder import hf_api

    layout = read_gguf_layout(path, problems)
    problems.raise_if_any()
    assert layout is not None
    try:
        arch = architecture(layout.metadata)
    except CheckpointError as e:
        problems.add(str(e))
        problems.raise_if_any()
    config = hf_config(layout.metadata, arch, [t.name for t in layout.tensors])
    rope = next((t for t in layout.tensors if t.name == ROPE_FREQS), None)
    if rope is not None:
        _read_rope_freqs(path, rope, arch, config, problems)
    problems.raise_if_any()
    try:
        hf_api().config_from_hf(config)  # refuses what attnlab cannot build before any weight is read
    except Exception as e:  # the converters' ValueError / ConfigError / CheckpointError with the reason
        problems.add(refusal(e).replace("config.json", "the GGUF metadata (read as config.json)", 1))
        problems.raise_if_any()
    names = _mapped_names(layout, arch, problems)
    held = _held(layout, dtype, problems)
    problems.raise_if_any()
    try:
        where = pick_device(device)
    except RuntimeError as e:
        problems.add(str(e))
        problems.raise_if_any()
    too_big = weights_refusal(sum(t.numel for t in names.values()), held, where)
    if too_big:  # before a single value is dequantized
        problems.add(too_big)
    problems.raise_if_any()
    return layout, arch, config, names, held


def chosen_tokenizer(
    tokenizer: str | Path | Tokenizer | None, layout: GgufLayout, arch: str, config: dict[str, Any], problems: Problems
) -> tuple[Tokenizer | None, str]:
    """(the tokenizer, what it is): the one the user named, else the file's own (gguf_tokenizer.py)."""
    from attnlab.checkpoints.gguf_tokenizer import gguf_tokenizer
    from attnlab.checkpoints.tokenizer_files import tokenizer_at

    if isinstance(tokenizer, (str, Path)):
        return tokenizer_at(tokenizer, problems, config["model_type"]), f"--tokenizer {tokenizer}"
    if tokenizer is not None:
        return tokenizer, f"--tokenizer {getattr(tokenizer, 'kind', '?')}"
    return gguf_tokenizer(layout.metadata, arch, problems)


def provenance(
    layout: GgufLayout, arch: str, config: dict[str, Any], settings: dict[str, dict[str, Any]], held: torch.dtype
) -> dict[str, Any]:
    """The model's metadata: where it was read from and what was done to its weights ("quantization", the one
    place that says it; the app's banner ("notice"), Model info and `attnlab info` show it), where each setting
    came from (GGUF metadata keys), the chat template."""
    from attnlab.checkpoints.gguf_arch import ARCH_KEYS
    from attnlab.checkpoints.gguf_tokenizer import chat_template

    fact = quantization_fact(layout, held)
    done = str(fact["text"])
    prefix = str(layout.metadata.get("general.architecture", arch))
    keys = {hf: f"{prefix}.{key}" for key, hf in ARCH_KEYS[arch].items()}
    metadata: dict[str, Any] = {
        "source": f"GGUF file ({arch}), {done}",
        "model_type": config["model_type"],
        "quantization": fact,
        "settings": _sources(settings, keys),
        "notice": done[0].upper() + done[1:] + ".",  # the app's banner
    }
    template = chat_template(layout.metadata)
    if template is not None:
        metadata["chat_template"] = template
    return metadata


def load_gguf(
    path: Path, device: str = "cpu", tokenizer: str | Path | Tokenizer | None = None, dtype: str | None = None
) -> LiveModel:
    """The model in the GGUF file at `path`, or one CheckpointError listing what is wrong with it."""
    from attnlab.checkpoints.assemble import build_live_model, build_module, drop_tied_duplicates
    from attnlab.checkpoints.hf_folder import hf_api, setting_sources

    problems = Problems(path)
    layout, arch, config, names, held = read_plan(path, dtype, device, problems)
    lazy = GgufTensors(path, arch, config, names, held)
    try:
        model_config, tensors, notes = hf_api().convert(config, lazy)  # dequantized here, tensor by tensor
    except CheckpointError as e:
        problems.add(f"the tensors do not fit the metadata: {e}")
        problems.raise_if_any()
    tok, tok_desc = chosen_tokenizer(tokenizer, layout, arch, config, problems)
    if tok is not None and tok.vocab_size > model_config.out_vocab_size:
        problems.add(
            f"the tokenizer has {tok.vocab_size} tokens but the model's vocabulary only {model_config.out_vocab_size}"
        )
    metadata = provenance(layout, arch, config, setting_sources(config, model_config, notes), held)
    metadata["tokenizer"] = tok_desc + (f"; specials {tok.specials.description}" if tok is not None else "")
    module = build_module(model_config) if not model_config.problems() else None
    if module is not None:
        tensors = drop_tied_duplicates(tensors, module, problems)
    return build_live_model(
        problems,
        model_config,
        tensors,
        tok,
        tok,
        name=path.name,
        metadata=metadata,
        device=device,
        notices=[metadata["notice"], *notes],
        module=module,
        dtype=None,
    )
