"""A cheap fingerprint of a module's weights: what tells a held run that the weights it came from changed (issue 38.5).

The in-place version counters alone miss writes that bypass autograd: `p.data = other` (a new tensor under the
same Parameter), `p.data.copy_(other)` or `p.data[...] = ...` (`.data` has a counter of its own). So the print
holds, per parameter, its storage address, dtype, device and shape (a replaced tensor has another address), the
sum of the version counters (in-place ops under no_grad, load_state_dict's copy_), and a few values read at fixed
positions spread over each tensor (a write through `.data` into the same storage; SAMPLES_PER_DIM per dimension,
so at most 8 values of a vector, 16 of a matrix, 64 of a stack of experts).

The cost is O(number of parameters), not O(elements): about 300 small reads and one copy to the host per device
on an 8B Llama. A write through `.data` that changes only values between the sampled positions is not seen;
every other way of changing the weights is. Parameters on the meta device (layers offloaded to disk between
runs) contribute their layout only; inference tensors (accelerate's hooks) have no version counter. Qt-free.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

import torch
from torch import nn

SAMPLES_PER_DIM = {1: 8}  # values read along each dimension of a tensor of that many dimensions (else DEFAULT)
DEFAULT_SAMPLES = 4


def _sample(p: torch.Tensor) -> torch.Tensor | None:
    """A few of `p`'s values at fixed positions spread over every dimension (the first and last included), as
    bytes [≤ 8 · itemsize]; None where they cannot be read (meta, empty, a subclass that refuses slicing)."""
    if p.device.type == "meta" or p.numel() == 0:
        return None
    x = p.detach()
    if x.dim() == 0:
        x = x.reshape(1)
    count = SAMPLES_PER_DIM.get(x.dim(), DEFAULT_SAMPLES)
    try:
        picked = x[tuple(slice(None, None, max(1, (size - 1) // (count - 1))) for size in x.shape)]  # a view
        return picked.contiguous().reshape(-1).view(torch.uint8)  # ≤ count ** dim elements, copied
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        return None


def weights_print(module: nn.Module, unsampled: Collection[str] = ()) -> tuple[int, str]:
    """(the sum of the parameters' version counters, a digest of their layout and sampled values). `unsampled`:
    parameter names whose values are not read (a LoRA adapter's own writes, forgiven by the run key)."""
    version = 0
    layout = hashlib.blake2b(digest_size=16)
    samples: dict[torch.device, list[torch.Tensor]] = {}
    for name, p in module.named_parameters():
        if not p.is_inference():
            version += p._version
        layout.update(f"{name}|{p.data_ptr()}|{p.dtype}|{p.device}|{tuple(p.shape)};".encode())
        picked = None if name in unsampled else _sample(p)
        if picked is not None:
            samples.setdefault(picked.device, []).append(picked)
    for device in sorted(samples, key=str):
        layout.update(torch.cat(samples[device]).cpu().numpy().tobytes())  # one copy to the host per device
    return version, layout.hexdigest()
