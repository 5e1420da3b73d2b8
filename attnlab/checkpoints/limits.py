"""Checks that run BEFORE a model is built from a checkpoint: every size the config claims against the
tensors actually in the file (naming the wrong field), and each loaded tensor's memory layout. The caps
themselves live in attnlab/limits.py."""

from __future__ import annotations

import re
from collections.abc import Iterable

import torch

from attnlab import limits
from attnlab.engine.config import ModelConfig

UNCHECKED_PARAMETERS = 16_000_000  # a model this small (64 MB) is built before its tensors are compared
_LAYER_INDEX = re.compile(r"^(encoder|decoder)\.(\d+)\.")


def shape_text(shape: Iterable[int]) -> str:
    """A tensor shape as the checkpoint messages write it: "[50257, 768]" (as torch prints a size; no digit
    grouping, which would read "[50,257, 768]" as three sizes)."""
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _revealed(config: ModelConfig, shapes: dict[str, tuple[int, ...]]) -> list[tuple[str, int, str]]:
    """(field, value the tensors show, evidence) for each config field one of the tensors pins down."""
    found: list[tuple[str, int, str]] = []

    def show(name: str, dim: tuple[int, ...], *fields: str) -> None:
        shape = shapes.get(name)
        if shape is not None and len(shape) > max(dim):
            for field, d in zip(fields, dim, strict=True):
                found.append((field, int(shape[d]), f"{name} is {shape_text(shape)}"))

    if config.has_encoder:
        show("src_embed.weight", (0, 1), "src_vocab_size", "embed_dim" if config.embed_dim else "d_model")
        show("encoder.0.ffn.lin1.weight", (0,), "d_ff")
    if config.has_decoder:
        show("tgt_embed.weight", (0, 1), "tgt_vocab_size", "d_model")
        show("decoder.0.ffn.lin1.weight", (0,), "d_ff")
    for stack in ("encoder", "decoder") if config.head_dim and config.n_heads >= 1 else ():  # w-headdim
        shape = shapes.get(f"{stack}.0.self_attn.w_q.weight")  # [H·d_k, d]
        if shape is not None and len(shape) == 2:
            found.append(
                (
                    "head_dim",
                    int(shape[0]) // config.n_heads,
                    f"{stack}.0.self_attn.w_q.weight is {shape_text(shape)} ({config.n_heads} heads)",
                )
            )
    if config.positional == "learned":
        show("src_pos.weight" if config.has_encoder else "tgt_pos.weight", (0,), "max_len")
    for stack, field in (("encoder", "n_encoder_layers"), ("decoder", "n_decoder_layers")):
        if stack == "encoder" and config.share_layers:  # ALBERT: one layer's tensors serve every layer
            continue
        indices = {int(m.group(2)) for n in shapes if (m := _LAYER_INDEX.match(n)) and m.group(1) == stack}
        if indices and (stack == "encoder" and config.has_encoder or stack == "decoder" and config.has_decoder):
            found.append((field, max(indices) + 1, f"the file has {stack} layers 0 to {max(indices)}"))
    return found


def check_config_sizes(config: ModelConfig, shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """Every config size larger than the tensors in the file show, named, before anything is built (a model
    built from a config bigger than its file could exhaust memory; smaller sizes are reported later, tensor by
    tensor, as missing or misshapen).
    `shapes`: tensor name -> shape of what the file holds. Empty when nothing contradicts the config."""
    problems = []
    reported = set()
    for field, value, evidence in _revealed(config, shapes):
        claimed = getattr(config, field)
        if claimed > value and field not in reported:  # smaller claims show up as misshapen tensors later
            reported.add(field)
            problems.append(f"the config says {field} {claimed:,}, but {evidence}: {field} should be {value:,}")
    held = sum(_numel(s) for s in shapes.values())
    needed = config.parameter_count()
    # a few missing tensors are listed by name once the model is built; a config far bigger than the file
    # is refused here, so building never allocates much more than the file holds
    if not problems and needed > max(4 * held, UNCHECKED_PARAMETERS):
        problems.append(
            f"the config describes a model of {needed:,} parameters, but the file holds only {held:,} "
            "values: its sizes do not match the tensors"
        )
    return problems


def _numel(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def tensor_layout_problems(tensors: dict[str, torch.Tensor]) -> list[str]:
    """Tensors that are not plain arrays of their own values: zero or negative strides (one value posing as
    many), views larger than their storage, or more values than any model here has. Checked before any
    arithmetic touches them (a zero-stride tensor of 10^12 cells would be materialised by the first check)."""
    bad, huge = [], []
    for name, t in tensors.items():
        if t.numel() > limits.MAX_PARAMETERS:
            huge.append(f"{name} {shape_text(t.shape)}")
            continue
        overlapping = any(st <= 0 and n > 1 for st, n in zip(t.stride(), t.shape, strict=True))
        span = sum((n - 1) * st for n, st in zip(t.shape, t.stride(), strict=True)) + 1 if t.numel() else 0
        storage_cells = t.untyped_storage().nbytes() // max(t.element_size(), 1)
        if overlapping or t.storage_offset() + span > storage_cells:
            bad.append(name)
    out = []
    refused = set(bad)
    plain = {n: t for n, t in tensors.items() if n not in refused and t.numel() <= limits.MAX_PARAMETERS}
    shared = _shared_storage_problem(plain)
    if shared:  # each tensor a plain array, but many of them the same bytes
        out.append(shared)
    if huge:
        out.append(
            f"these tensors claim more than {limits.MAX_PARAMETERS:,} values: "
            + ", ".join(limits.excerpt(h, 120) for h in huge[:5])
        )
    if bad:
        out.append(
            "these tensors reuse the same memory for many values (zero strides or views beyond their "
            "storage), which a saved weight never does: "
            + ", ".join(limits.excerpt(b) for b in bad[:5])
            + (f", … and {len(bad) - 5} more" if len(bad) > 5 else "")
        )
    return out


SHARED_STORAGE_FACTOR = 4  # tied weights share storage (an output tied to its embedding: ~1.3 x); far more is forged


def _shared_storage_problem(tensors: dict[str, torch.Tensor]) -> str:
    """Many tensors viewing the same few bytes (a 20 kB file posing as a gigabyte model): the values the
    tensors claim against the bytes their storages hold, counted before anything copies them."""
    storages: dict[int, int] = {}
    claimed = 0
    for t in tensors.values():
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        claimed += t.numel() * t.element_size()
    held = sum(storages.values())
    if claimed > SHARED_STORAGE_FACTOR * held + (1 << 20):
        return (
            f"its tensors claim {claimed:,} bytes but their storages hold only {held:,}: they overlap, "
            "reusing the same memory for many weights, which a saved checkpoint never does"
        )
    return ""
