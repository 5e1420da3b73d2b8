"""PyTorch .pt/.pth files, read ONLY through `torch.load(weights_only=True)`: tensors and plain data come
back, anything that would import or call code is refused by PyTorch's restricted unpickler before it runs.

Accepted layouts (see docs/checkpoint-format.md):
  {"state_dict": {name: tensor}, "config": {...} or JSON, "src_tokenizer": JSON, "tgt_tokenizer": JSON,
   "name": str, "metadata": {...}}
  {name: tensor, ..., "config": {...}, ...}                       (flat: parameters next to the config)
Parameter names are attnlab's; nn.Transformer names (encoder.layers.0.self_attn.in_proj_weight, ...) are
converted, with in_proj split into W_Q, W_K, W_V.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from attnlab import limits
from attnlab.checkpoints.assemble import assemble
from attnlab.checkpoints.errors import CheckpointError, Problems
from attnlab.checkpoints.header import short_reason
from attnlab.checkpoints.limits import tensor_layout_problems
from attnlab.checkpoints.pickle_scan import torch_file_problem
from attnlab.engine.live import LiveModel
from attnlab.engine.tokenizer import Tokenizer

if TYPE_CHECKING:  # bare.py is imported where it is used
    from attnlab.checkpoints.bare import ImportSettings
    from attnlab.engine.config import ModelConfig

    # what nanogpt_parts and bare_parts read from a file: (config, tensors, tokenizer, metadata)
    ModelParts = tuple[ModelConfig | None, dict[str, torch.Tensor] | None, Tokenizer | None, dict[str, Any]]

EXTRA_KEYS = ("config", "src_tokenizer", "tgt_tokenizer", "name", "metadata")
STATE_KEYS = ("state_dict", "model_state_dict")
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default container
PICKLE_PROTO = b"\x80"  # a pickle stream of protocol 2 or later (torch.save's legacy format)

_LAYER = re.compile(r"^(?:.*\.)?(encoder|decoder)\.layers\.(\d+)\.(.+)$")
_FINAL_NORM = re.compile(r"^(?:.*\.)?(encoder|decoder)\.norm\.(weight|bias)$")
_RENAME = {
    "self_attn.out_proj": "self_attn.w_o",
    "multihead_attn.out_proj": "cross_attn.w_o",
    "linear1": "ffn.lin1",
    "linear2": "ffn.lin2",
    "norm1": "norm1",
    "norm2": "norm2",
    "norm3": "norm3",
}
_SEPARATE_PROJ = {"q_proj_weight": "w_q", "k_proj_weight": "w_k", "v_proj_weight": "w_v"}


def refusal_reason(error: BaseException) -> str:
    text = str(error)
    blocked = re.search(r"GLOBAL ([\w.]+)", text)
    if blocked:
        return (
            f"refused to load: the file asks to import {blocked.group(1)}, and unpickling it could run "
            "code. attnlab reads .pt files only in PyTorch's weights-only mode (tensors and plain data), "
            "so nothing in it was run. Save a dict of tensors plus the config instead "
            "(docs/checkpoint-format.md)"
        )
    if "Weights only load failed" in text:
        operand = re.search(r"Unsupported operand \d+", text)
        detail = f" ({operand.group(0)})" if operand else ""
        return (
            "refused to load: the file uses pickle instructions beyond tensors and plain data"
            f"{detail}. attnlab reads .pt files only in PyTorch's weights-only mode, so nothing in it "
            "was run"
        )
    if isinstance(error, RecursionError):
        return "refused to load: its pickle nests values too deeply to read safely"
    if isinstance(error, MemoryError) or "alloc" in text.lower() and "fail" in text.lower():
        return "refused to load: reading it needs more memory than this machine has (its sizes are implausible)"
    if "record size" in text and "does not match" in text:
        return (
            "the file is damaged or forged: a tensor's storage declares more data than the file holds "
            f"({short_reason(error)})"
        )
    return f"this is not a PyTorch checkpoint that can be read ({short_reason(error)})"


def convert_nn_transformer(state: dict[str, torch.Tensor], problems: Problems, notices: list[str]) -> dict:
    """Rename torch.nn.Transformer parameters to attnlab's; other names pass through unchanged."""
    out: dict[str, torch.Tensor] = {}
    converted = 0
    for key, value in state.items():
        layer, final = _LAYER.match(key), _FINAL_NORM.match(key)
        if final:
            out[f"{'enc' if final.group(1) == 'encoder' else 'dec'}_norm.{final.group(2)}"] = value
            converted += 1
            continue
        if not layer:
            out[key] = value
            continue
        stack, i, rest = layer.groups()
        base = f"{stack}.{i}."
        attn = "cross_attn" if rest.startswith("multihead_attn.") else "self_attn"
        leaf = rest.split(".")[-1]
        converted += 1
        if leaf in ("in_proj_weight", "in_proj_bias"):
            kind = "weight" if leaf == "in_proj_weight" else "bias"
            if value.shape[0] % 3:
                problems.add(f"{key}: expected 3·d_model rows (Q, K and V stacked) got {list(value.shape)}")
                continue
            chunks = value.chunk(3, dim=0)  # [3d, d] -> 3 x [d, d]  (biases: [3d] -> 3 x [d])
            for part, chunk in zip(("w_q", "w_k", "w_v"), chunks, strict=True):
                out[f"{base}{attn}.{part}.{kind}"] = chunk.contiguous()
        elif leaf in _SEPARATE_PROJ:
            out[f"{base}{attn}.{_SEPARATE_PROJ[leaf]}.weight"] = value
        else:
            module, _, param = rest.rpartition(".")
            out[f"{base}{_RENAME.get(module, module)}.{param}"] = value
    if converted:
        notices.append(
            f"Converted {converted} PyTorch nn.Transformer tensors to attnlab names "
            "(each in_proj weight split into W_Q, W_K and W_V)."
        )
    return out


def split_contents(obj: dict, problems: Problems) -> tuple[dict[str, torch.Tensor], dict]:
    """(state dict, extras) from either accepted layout."""
    state_key = next((k for k in STATE_KEYS if isinstance(obj.get(k), dict)), None)
    if state_key:
        state, extras = obj[state_key], obj
    else:
        state = {k: v for k, v in obj.items() if k not in EXTRA_KEYS}
        extras = obj
    tensors: dict[str, torch.Tensor] = {}
    skipped = []
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            tensors[str(key)] = value
        elif state_key:  # inside a state dict everything must be a tensor
            problems.add(f"state dict entry {key!r} is a {type(value).__name__}, not a tensor")
        else:
            skipped.append(str(key))  # e.g. "epoch" or "optimizer" next to the weights: not ours to read
    return tensors, {**{k: extras.get(k) for k in EXTRA_KEYS}, "skipped": skipped}


def encoder_alone(tensors: dict) -> dict:
    """nn.TransformerEncoder saved on its own: layers.N.… and norm.… are its encoder's."""
    if not any(k.startswith("layers.") for k in tensors) or any(".layers." in k for k in tensors):
        return tensors
    return {(f"encoder.{k}" if k.startswith(("layers.", "norm.")) else k): v for k, v in tensors.items()}


def read_torch_object(path: Path, problems: Problems) -> Any:  # what torch.load(weights_only=True) gives
    """torch.load(weights_only=True), memory-mapped where the file allows; refusals become problems."""
    with open(path, "rb") as f:
        head = f.read(4)
    if not (head.startswith(ZIP_MAGIC) or head[:1] == PICKLE_PROTO):
        problems.add("this is not a PyTorch checkpoint: it is neither a torch.save zip archive nor a pickle stream")
        problems.raise_if_any()
    refused = torch_file_problem(path, head.startswith(ZIP_MAGIC))
    if refused:  # found without unpickling anything
        problems.add(f"refused to load: {refused}")
        problems.raise_if_any()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # protocol warnings; any refusal comes back as an exception
            return torch.load(str(path), weights_only=True, map_location="cpu", mmap=head.startswith(ZIP_MAGIC))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # UnpicklingError for refused content, RuntimeError/EOFError/... for garbage
        problems.add(refusal_reason(e))
        problems.raise_if_any()


def refuse_odd_tensors(tensors: dict[str, torch.Tensor], problems: Problems) -> None:
    """Too many tensors, or zero-stride / oversized views: refused before any arithmetic could materialise them."""
    if len(tensors) > limits.MAX_TENSORS:
        problems.add(
            f"the file holds {len(tensors):,} tensors; attnlab reads checkpoints of at most "
            f"{limits.MAX_TENSORS:,} tensors"
        )
    for p in tensor_layout_problems(tensors):
        problems.add(p)
    problems.raise_if_any()


def load_torch_file(
    path: Path,
    device: str = "cpu",
    settings: ImportSettings | None = None,
    tokenizer: Tokenizer | None = None,
    dtype: str | None = None,
) -> LiveModel:
    """`settings` (bare.ImportSettings) and `tokenizer` matter only for files that do not say these
    themselves: nanoGPT checkpoints (tokenizer) and bare nn.Transformer state dicts (both)."""
    from attnlab.checkpoints.assemble import build_live_model
    from attnlab.checkpoints.bare import ImportSettings, bare_parts
    from attnlab.checkpoints.nanogpt import is_nanogpt, nanogpt_parts

    problems = Problems(path)
    obj = read_torch_object(path, problems)
    notices: list[str] = []

    def build(parts: ModelParts, name: str) -> LiveModel:
        config, tensors, tok, metadata = parts
        return build_live_model(
            problems,
            config,
            tensors,
            tok,
            tok,
            name=name,
            metadata=metadata,
            device=device,
            notices=notices,
            dtype=dtype,
        )

    if is_nanogpt(obj):  # its tensors are checked before the conversion splits or compares any of them
        refuse_odd_tensors({str(k): v for k, v in obj["model"].items() if isinstance(v, torch.Tensor)}, problems)
        parts = nanogpt_parts(obj, path, problems, notices, tokenizer)
        return build(parts, path.parent.name or path.stem)
    if not isinstance(obj, dict):
        problems.add(
            f"the file holds a {type(obj).__name__}, but attnlab needs a dict of tensors with a "
            "'config' entry (docs/checkpoint-format.md)"
        )
        problems.raise_if_any()
    tensors, extras = split_contents(obj, problems)
    refuse_odd_tensors(tensors, problems)
    if extras["config"] is None:
        tensors = encoder_alone(tensors)
    tensors = convert_nn_transformer(tensors, problems, notices)
    if extras["skipped"]:
        notices.append("Ignored entries that are not tensors: " + ", ".join(extras["skipped"][:12]))
    if extras["config"] is None and any(k.startswith(("encoder.", "decoder.")) for k in tensors):
        parts = bare_parts(tensors, settings or ImportSettings(), tokenizer, problems, notices)
        return build(parts, str(extras["name"] or path.stem))
    return assemble(
        problems,
        config_value=extras["config"],
        tensors=tensors,
        src_json=extras["src_tokenizer"],
        tgt_json=extras["tgt_tokenizer"],
        name=str(extras["name"] or path.stem),
        metadata_value=extras["metadata"],
        device=device,
        notices=notices,
        dtype=dtype,
    )


def probe_bare_state_dict(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """{"d_model", "arch", "layers"} when `path` is a .pt/.pth holding a bare nn.Transformer state dict (no
    attnlab config, not nanoGPT), so the app can ask for the settings first; None for anything else
    (including files that cannot be read: opening them reports why)."""
    from attnlab.checkpoints.bare import layer_indices
    from attnlab.checkpoints.nanogpt import is_nanogpt

    path = Path(path)
    if not path.is_file() or path.suffix.lower() not in (".pt", ".pth", ".bin", ".ckpt"):
        return None
    problems = Problems(path)
    try:
        obj = read_torch_object(path, problems)
    except Exception:  # CheckpointError and anything else: the real load says why
        return None
    if not isinstance(obj, dict) or is_nanogpt(obj):
        return None
    tensors, extras = split_contents(obj, problems)
    if extras["config"] is not None:
        return None
    try:  # the CLI's own check, before any tensor is touched: a refused file is left to the real load to explain
        refuse_odd_tensors(tensors, problems)
    except CheckpointError:
        return None
    tensors = convert_nn_transformer(encoder_alone(tensors), problems, [])
    enc, dec = layer_indices(tensors, "encoder"), layer_indices(tensors, "decoder")
    first = tensors.get(f"{'encoder' if enc else 'decoder'}.0.self_attn.w_q.weight")
    if first is None:
        return None
    arch = "encoder-decoder" if enc and dec else ("encoder-only" if enc else "decoder-only")
    return {"d_model": int(first.shape[1]), "arch": arch, "layers": (len(enc), len(dec))}
