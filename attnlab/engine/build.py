"""Building a Transformer without touching the caller's random state.

nn.Linear and nn.Embedding draw their first values from torch's GLOBAL generator while they are constructed.
`build_transformer` does that inside `fork_rng` under one process-wide lock, so the caller's global state is
restored afterwards and two builds on two threads cannot interleave their save/restore. With a seed, every
parameter is then drawn again from a private `torch.Generator`: the same seed gives the same weights on any
thread, whatever else runs at the same time.
"""

from __future__ import annotations

import threading

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
    every one from a checkpoint: nn.Linear and nn.Embedding skip their random reset while it is built (no
    random numbers, ~1 s less for a GPT-2-small-sized model). Not built on the meta device: initialising meta
    tensors imports torch._dynamo (~1.5 s, and absent from the trimmed bundle). The class methods are swapped
    only under the global lock that every attnlab model build holds."""
    layers = (nn.Linear, nn.Embedding)
    saved = {cls: cls.reset_parameters for cls in layers}
    with _GLOBAL_RNG_LOCK:
        try:
            for cls in layers:
                cls.reset_parameters = _no_reset  # type: ignore[method-assign]
            return Transformer(config, initialise=False)
        finally:
            for cls, reset in saved.items():
                cls.reset_parameters = reset  # type: ignore[method-assign]


def _no_reset(self: nn.Module) -> None:
    """reset_parameters that leaves the freshly allocated values as they are."""
