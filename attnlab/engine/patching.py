"""Activation patching (issue 37): a value of run A (clean) put in place of the same entry of run B (corrupted).

A `Patch` is part of a run's options (RunOptions.patch, the option table's PATCH spec): which entry, which part
of it (one head, one position, both, or the whole entry) and the source values, taken from run A of the same
model and length by `patch_from`. The forward replaces the value where it is produced (engine/context.py
RunContext.patched: after the Q/K/V projections, after a site's per-head context, a site's output, an FFN's
output, a layer's output) and records the patched value under the entry's name. The run cache resumes a
patched run at the patched layer (the spec is FROM_SITE: engine/runcache.py). Qt-free; imports no model code.

Shapes (unbatched, as the trace holds them): Q, K, V, context [H, T, dk] (K, V: the shared K/V heads under
grouped-query attention); a site's out, an FFN's out, a layer's out [T, d].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.engine.config import ModelConfig

if TYPE_CHECKING:  # the options import this module, and the window paints before torch is imported
    from torch import Tensor

HEAD_STEPS = ("q", "k", "v", "context")  # a site's entries with heads: [H, T, dk]
ROW_STEPS = ("out",)  # a site's entries of rows: [T, d]
KINDS = ("head", "position", "cell", "whole")  # what part of an entry a patch replaces


class PatchError(ValueError):
    """A patch that cannot run: between different models or lengths, or on an entry that cannot be patched."""


@dataclass(frozen=True, eq=False)
class PatchSource:
    """Run A's value of one entry, unbatched ([H, T, dk] or [T, d]), the model it came from and its tokens.
    Compared by identity: two patches are the same only when they carry the same source."""

    value: Tensor
    config: ModelConfig
    label: str = "A"


@dataclass(frozen=True)
class Patch:
    """Replace `entry` of this run (a head's part `head`, a position `position`, both, or all of it when both
    are None) with run A's values (`source`)."""

    entry: str
    source: PatchSource
    head: int | None = None
    position: int | None = None

    @property
    def layer(self) -> tuple[str, int]:
        """(stack, layer index) the patch sits in: the run resumes there."""
        where = names.layer_position(self.entry)
        assert where is not None, "patch_problems refuses entries outside the layers"
        return where

    def index(self) -> tuple[int | slice, ...]:
        """The part of the unbatched entry replaced: [head, position] of a head entry, [position] of rows."""
        every = slice(None)
        position = every if self.position is None else self.position
        if has_heads(self.entry):
            return (every if self.head is None else self.head, position)
        return (position,)

    def words(self) -> str:
        """'dec.3.self.context head 2 at position 5', in the banner's and the menu's words."""
        parts = [self.entry]
        if self.head is not None:
            parts.append(f"head {self.head + 1}")
        if self.position is not None:
            parts.append(f"at position {self.position}")
        return " ".join(parts)


def has_heads(entry: str) -> bool:
    """Whether an entry is split into heads ([H, T, dk]): a site's Q, K, V or context."""
    return names.site_of(entry) is not None and names.step_of(entry) in HEAD_STEPS


def patchable(entry: str) -> bool:
    """Whether the forward has a patch point for `entry` (see the module docstring)."""
    layer_name = names.layer_of(entry)
    if layer_name is None:
        return False
    if names.site_of(entry) is not None:
        return names.step_of(entry) in HEAD_STEPS + ROW_STEPS
    return entry in (names.layer_out(layer_name), names.ffn_entry(layer_name, "out"))


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _form_problem(patch: object) -> str:
    """Why `patch` is not a well-formed Patch ('' when it is): its types, its values' dtype and finiteness."""
    import torch

    if not isinstance(patch, Patch):
        return f"a patch must be a Patch (attnlab.engine.patching), not {type(patch).__name__}"
    if not isinstance(patch.entry, str):
        return f"a patch's entry is a name such as 'dec.1.out', not {type(patch.entry).__name__}"
    source = patch.source
    if not isinstance(source, PatchSource) or not isinstance(source.value, torch.Tensor):
        return f"the patch of {patch.entry} holds no tensor of run A's values (patch_from makes one)"
    if not source.value.is_floating_point():
        return f"the patch of {patch.entry} holds {source.value.dtype} values; run A's values are floating point"
    for what, value in (("head", patch.head), ("position", patch.position)):
        if value is not None and not _whole(value):
            return f"a patch's {what} is a whole number or None, not {value!r}"
    if not bool(torch.isfinite(source.value).all()):
        return f"run A's values of {patch.entry} hold NaN or infinity; patch with the values of a finite run"
    return ""


def entry_problem(patch: Patch, config: ModelConfig, heads: int) -> str:
    """Why `patch` cannot run on `config` with `heads` Q heads ('' when it can), in one line."""
    form = _form_problem(patch)
    if form:
        return form
    if not patchable(patch.entry):
        return (
            f"{patch.entry!r} cannot be patched; patch a site's q, k, v, context or out, a layer's ffn.out or a "
            "layer's out"
        )
    if patch.source.value.dim() != (3 if has_heads(patch.entry) else 2):  # [H, T, dk] or [T, d]
        shape = list(patch.source.value.shape)
        return f"the patch of {patch.entry} is {shape}; patch between two runs of the same model"
    if patch.source.config != config:
        return f"the patch of {patch.entry} comes from another model; patch between two runs of the same model"
    stack, index = patch.layer
    layers = config.n_encoder_layers if stack == "enc" else config.n_decoder_layers
    has_stack = config.has_encoder if stack == "enc" else config.has_decoder
    site = names.site_of(patch.entry)
    if (
        not has_stack
        or index >= layers
        or (site is not None and names.site_kind(site) == "dec.cross" and not config.has_encoder)
    ):
        return f"this {config.arch} model has no {patch.entry}"
    if patch.head is not None and not has_heads(patch.entry):
        return f"{patch.entry} has no heads; patch a position of it or all of it"
    if patch.head is not None and not 0 <= patch.head < patch.source.value.shape[0]:
        return f"{patch.entry} has {patch.source.value.shape[0]} heads; head {patch.head + 1} is not one of them"
    positions = patch.source.value.shape[-2 if has_heads(patch.entry) else 0]  # [H, T, dk] or [T, d]
    if patch.position is not None and not 0 <= patch.position < positions:
        return f"run A has {positions} positions; position {patch.position} is not one of them (count from 0)"
    return ""


def patch_problems(patches: object, config: ModelConfig, heads: int) -> list[str]:
    """Why the options' patches cannot run (empty: they can)."""
    if not isinstance(patches, tuple):
        return ["patch must be a tuple of Patch (attnlab.engine.patching.patch_from makes them)"]
    return [p for p in (entry_problem(patch, config, heads) for patch in patches) if p]


def by_entry(patches: Iterable[Patch]) -> dict[str, tuple[Patch, ...]]:
    """{entry: its patches, in order} (what RunContext looks up at each patch point)."""
    out: dict[str, tuple[Patch, ...]] = {}
    for patch in patches:
        out[patch.entry] = out.get(patch.entry, ()) + (patch,)
    return out


def sites_of(patches: Mapping[str, tuple[Patch, ...]]) -> frozenset[str]:
    """The attention sites some patch reaches into (their forward consults the patches)."""
    return frozenset(site for site in (names.site_of(e) for e in patches) if site is not None)


def replaced(x: Tensor, patches: tuple[Patch, ...]) -> Tensor:
    """x [1, ...] (batched, one sequence) with each patch's part replaced by its source's: a new tensor."""
    out = x.clone()
    for patch in patches:
        source = patch.source.value
        if tuple(source.shape) != tuple(x.shape[1:]):
            raise PatchError(length_problem(patch, tuple(source.shape), tuple(x.shape[1:])))
        index = patch.index()
        out[0][index] = source[index].to(device=x.device, dtype=x.dtype)
    return out


def length_problem(patch: Patch, theirs: tuple[int, ...], ours: tuple[int, ...]) -> str:
    """Why run A's value does not fit this run's entry, in one line."""
    axis = -2 if has_heads(patch.entry) else 0
    others = [n for k, n in enumerate(theirs) if k != axis % len(theirs)] if theirs else []
    if (
        len(theirs) == len(ours)
        and theirs[axis] != ours[axis]
        and others == [n for k, n in enumerate(ours) if k != axis % len(ours)]
    ):
        return (
            f"run A has {theirs[axis]} positions and this run {ours[axis]}: patch between runs of the same length "
            f"({patch.entry})"
        )
    return f"{patch.entry} is {list(theirs)} in run A and {list(ours)} here: patch between runs of the same model"


def departs(patches: tuple[Patch, ...]) -> list[str]:
    """The banner's reason for a patched run (empty: none)."""
    if not patches:
        return []
    what = "; ".join(p.words() for p in patches)
    stack, index = min(p.layer for p in patches)
    return [f"patched from run {patches[0].source.label}: {what} (re-run from {names.layer(stack, index)})"]


def layer_patches(patches: tuple[Patch, ...], stack: str, index: int) -> tuple[Patch, ...]:
    """The patches inside layer (stack, index): what the run cache compares at that layer's sites."""
    return tuple(p for p in patches if p.layer == (stack, index))


def logit_difference(logits: Tensor, correct: int, wrong: int, position: int = -1) -> float:
    """logits[position, correct] - logits[position, wrong] of logits [T, V]."""
    row = logits[position].float()  # [V]
    return float(row[correct] - row[wrong])


__all__ = ["Patch", "PatchError", "PatchSource", "replaced"]
