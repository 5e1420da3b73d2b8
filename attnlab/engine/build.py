"""Building a Transformer without touching the caller's random state.

nn.Linear and nn.Embedding draw their first values from torch's GLOBAL generator while they are constructed.
`build_transformer` does that inside `fork_rng` under one process-wide lock, so the caller's global state is
restored afterwards and two builds on two threads cannot interleave their save/restore. With a seed, every
parameter is then drawn again from a private `torch.Generator`: the same seed gives the same weights on any
thread, whatever else runs at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from attnlab.engine.config import ModelConfig
from attnlab.engine.model import Transformer

_GLOBAL_RNG_LOCK = threading.Lock()  # every attnlab use of torch's global generator goes through here


def build_transformer(config: ModelConfig, seed: int | None = None, initialise: bool = True) -> Transformer:
    """A freshly initialised Transformer on the CPU; the global random state is left as it was.
    `initialise=False`: parameters are allocated but hold arbitrary values, for a caller that overwrites every
    one of them from a checkpoint (no random draws: ~1 s less for a GPT-2-small-sized model)."""
    if not initialise:
        return empty_transformer(config)
    with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        module = Transformer(config)
    if seed is not None:
        seeded_init(module, torch.Generator().manual_seed(int(seed)))
    return module


@torch.no_grad()
def seeded_init(module: Transformer, generator: torch.Generator) -> None:
    """Every parameter drawn from `generator`, in a fixed order: Xavier-uniform matrices, N(0, 1/d) embeddings
    and positions, U(±1/√fan_in) linear biases, LayerNorms at 1 and 0 (the same scheme Transformer uses)."""
    std = module.config.d_model**-0.5
    for name, p in module.named_parameters():
        if name.endswith("embed.weight") or name.endswith("_pos.weight"):
            p.normal_(0.0, std, generator=generator)
        elif p.dim() == 2:
            nn.init.xavier_uniform_(p, generator=generator)
    for m in module.modules():
        if isinstance(m, nn.Linear) and m.bias is not None:
            bound = m.in_features**-0.5
            m.bias.uniform_(-bound, bound, generator=generator)


def empty_transformer(config: ModelConfig) -> Transformer:
    """A Transformer whose parameters are allocated on the CPU but never initialised, for a caller that fills
    every one from a checkpoint: nn.Linear and nn.Embedding skip their random reset while THIS thread builds it
    (no random numbers, ~1 s less for a GPT-2-small-sized model; other threads are unaffected). Not built on the
    meta device: initialising meta tensors imports torch._dynamo (~1.5 s, and absent from the trimmed bundle)."""
    _install_skippable_resets()
    _SKIP_RESET.on = True
    try:
        return Transformer(config, initialise=False)
    finally:
        _SKIP_RESET.on = False


_SKIP_RESET = threading.local()  # .on: the current thread is building an empty_transformer
_SKIPPABLE = (nn.Linear, nn.Embedding)


def _install_skippable_resets() -> None:
    """Wrap each layer class's reset_parameters once, so that a thread building an empty model skips it; every
    other call (any thread, any other time) runs the original unchanged."""
    with _GLOBAL_RNG_LOCK:
        for cls in _SKIPPABLE:
            original = cls.reset_parameters
            if getattr(original, "_attnlab_skippable", False):
                continue

            def reset(self: Any, _original: Callable[[Any], None] = original) -> None:
                if not getattr(_SKIP_RESET, "on", False):
                    _original(self)

            reset._attnlab_skippable = True  # type: ignore[attr-defined]
            cls.reset_parameters = reset  # type: ignore[method-assign]


META_ABOVE = (
    16_000_000  # parameters; a smaller model is allocated on the CPU (the meta device's first use costs ~2-4 s)
)


def loadable_transformer(config: ModelConfig) -> Transformer:
    """A Transformer to fill from a checkpoint with `fill_from`: on the meta device (no memory) when it is big,
    else with uninitialised CPU parameters (or where the meta device is missing from a trimmed bundle)."""
    if config.parameter_count() > META_ABOVE:
        try:
            return meta_transformer(config)
        except ImportError:
            pass
    return empty_transformer(config)


def meta_transformer(config: ModelConfig) -> Transformer:
    """A Transformer whose parameters have shapes but no memory (the meta device): what a loader fills with
    the checkpoint's own tensors (`fill_from`), so nothing is allocated before the sizes are checked and no
    float32 copy of a bf16 checkpoint is ever made."""
    _install_skippable_resets()
    _SKIP_RESET.on = True
    try:
        with torch.device("meta"):
            return Transformer(config, initialise=False)
    finally:
        _SKIP_RESET.on = False


@torch.no_grad()
def fill_from(module: Transformer, tensors: dict[str, torch.Tensor], dtype: torch.dtype) -> None:
    """Every parameter of `module` (built by meta_transformer, or any Transformer) becomes the checkpoint's
    tensor of its name (`tensors`: checkpoint_tensors' names), in `dtype`: a tensor already in `dtype` is used
    as it is (a memory-mapped safetensors tensor stays mapped, never copied), one in another dtype is converted
    alone, one at a time. Tied parameters stay one parameter. The sinusoid table is computed again."""
    first = {id(p): name for name, p in module.checkpoint_tensors().items()}
    made: dict[int, nn.Parameter] = {}
    for full_name, old in list(module.named_parameters(remove_duplicate=False)):
        owner_name, _, attr = full_name.rpartition(".")
        owner = module.get_submodule(owner_name) if owner_name else module
        new = made.get(id(old))
        if new is None:
            value = tensors[first[id(old)]]
            value = value.to(dtype) if value.dtype != dtype else value  # [same shape]
            new = nn.Parameter(value if value.is_contiguous() else value.contiguous(), requires_grad=old.requires_grad)
            made[id(old)] = new
        setattr(owner, attr, new)
    module.sinusoid = module.sinusoid_table().to(dtype)  # [max_len, d], was on the meta device
