"""Where and how a LiveModel's run computes: its device, its precision, what it stores of each layer, whether
its trace stays on the GPU, and a model whose layers are spread over GPU, host and disk (engine/offload.py).

Plain functions of the model, the options and the run's sides; LiveModel (engine/live.py) holds the knobs
(`lean_above`, `placement`, `held_dtype`). One of the three seams of engine/live.py (the others: input
preparation, live_inputs.py; run reuse, live_reuse.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from attnlab.engine import replay
from attnlab.engine.budget import HEADROOM, estimate_trace_bytes, fits_on_device, working_bytes
from attnlab.engine.config import ModelConfig
from attnlab.engine.devices import collect_garbage, release_device_memory
from attnlab.engine.live_inputs import Side, side_lengths
from attnlab.engine.memory import RunTooBig, available_on
from attnlab.engine.model import Transformer
from attnlab.engine.offload import Placement, streamed_layers
from attnlab.engine.options import RunOptions
from attnlab.engine.precision import convert_module, module_dtype, run_dtype
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_budget import run_needs, run_refusal

LEAN_ABOVE_BYTES = 64 << 20  # LiveModel.lean_above: whole traces up to this size; layers recomputed on read above


def element_size(dtype: torch.dtype) -> int:
    """Bytes of one number in `dtype`."""
    return torch.empty((), dtype=dtype).element_size()


def module_device(module: Transformer, placement: Placement | None) -> torch.device:
    """Where a run of `module` computes: its placement's device when its layers are spread out, else its
    weights' device."""
    if placement is not None:  # some layers live elsewhere: the run's device is where it computes
        return torch.device(placement.main)
    return next(module.parameters()).device


def hook_streaming(module: Transformer, placement: Placement, on_layer: Callable[[int, int], None]) -> None:
    """Call `on_layer(k, n)` as the k-th of the n layers that `placement` keeps away from the run's device
    streams in (the app's progress bar)."""
    streamed = streamed_layers(module, placement)
    for k, (_number, layer) in enumerate(streamed, start=1):
        layer.register_forward_pre_hook(partial(_streaming, on_layer, k, len(streamed)))


def _streaming(on_layer: Callable[[int, int], None], k: int, n: int, *_hook_args: object) -> None:
    on_layer(k, n)


def weights_to_place(module: Transformer, current: torch.device, device: torch.device, dtype: torch.dtype) -> int:
    """Bytes of weights a run on `device` in `dtype` must put there first (0 when they are there: `current`
    is where they are now)."""
    if current == device and module_dtype(module) == dtype:
        return 0
    return sum(p.numel() for p in module.checkpoint_tensors().values()) * element_size(dtype)


def fits_beside(
    config: ModelConfig,
    options: RunOptions,
    sides: dict[str, Side],
    device: torch.device,
    weights: int,
    dtype: torch.dtype,
    keep: replay.Keep,
) -> bool:
    """Whether this run (needing `weights` bytes of weights placed) fits the GPU's free memory beside the
    traces of the last run that someone still holds (the app keeps one on screen): then they stay where they
    are, and the new run pays nothing for them; else they move to the host first (free_device_memory_of),
    and the budget counts that memory."""
    collect_garbage()  # traces nobody holds are freed first (on the main thread: devices.collect_garbage)
    S, T = side_lengths(sides)
    needs = run_needs(config, options, S, T, element_size(dtype), weights, keep)
    return needs.total <= HEADROOM * available_on(device)


def choose_keep(
    config: ModelConfig,
    options: RunOptions,
    sides: dict[str, Side],
    device: torch.device,
    dtype: torch.dtype,
    weights: Callable[[], int],
    lean_above: int,
) -> replay.Keep:
    """What this run stores of each layer (engine/replay.py): everything, unless its whole trace would hold
    more than `lean_above` bytes; then each layer's output (the rest recomputed on read) and, on the CPU
    whenever the run fits the memory there with them (`weights()`: the bytes of weights to place first), each
    site's Q, K, V and mask too, so that a head's map is derived from them without running its layer again (a
    GPT-2-small layer at 512 tokens takes about half a second on a CPU, a long one seconds; on a GPU a layer
    takes milliseconds)."""
    if not options.record:
        return replay.WHOLE
    S, T = side_lengths(sides)
    element = element_size(dtype)
    if estimate_trace_bytes(config, options, S, T, element) <= lean_above:
        return replay.WHOLE
    if device.type != "cpu":
        return replay.OUTPUTS
    needs = run_needs(config, options, S, T, element, weights(), replay.ATTENTION)
    return replay.ATTENTION if needs.total <= HEADROOM * available_on(device) else replay.OUTPUTS


def choose_recorder(
    config: ModelConfig,
    options: RunOptions,
    sides: dict[str, Side],
    device: torch.device,
    element: int,
    notices: list[str],
    keep: replay.Keep,
) -> Recorder:
    """A recorder that keeps the trace on `device` when it fits there, else copies it to the host (a notice
    says so). `element`: bytes per number of the run."""
    if not options.record or device.type == "cpu":
        return Recorder(options.record)
    S, T = side_lengths(sides)
    trace_bytes = estimate_trace_bytes(config, options, S, T, element, keep)
    working = working_bytes(config, options, S, T, element, keep)
    fits, free = fits_on_device(device, trace_bytes + working)
    if fits:
        return Recorder(True)
    room = f"{free / 2**20:.0f} MiB free" if free >= 0 else "free memory that could not be read"
    notices.append(
        f"This trace needs about {trace_bytes / 2**20:.0f} MiB on the GPU, and {working / 2**20:.0f} MiB "
        f"more while it runs; the GPU has {room}. The model ran on the GPU and its steps were copied to "
        "the computer's memory as they were computed."
    )
    return Recorder(True, host=True)


def place(
    module: Transformer,
    placement: Placement | None,
    held_dtype: torch.dtype,
    device: torch.device,
    options: RunOptions,
    sides: dict[str, Side],
    keep: replay.Keep = replay.WHOLE,
) -> None:
    """Check that the run fits `device` in its precision (RunTooBig, one line with the numbers, before
    anything is allocated), then put the weights there in the run's dtype (engine/precision.py)."""
    dtype = run_dtype(held_dtype, options.precision)
    current = module_device(module, placement)
    if placement is not None and (device != current or dtype != held_dtype):
        raise RunTooBig(
            f"this model's weights are spread out ({placement.summary()}): it runs on {current} in "
            f"{str(held_dtype).removeprefix('torch.')} only"
        )
    weights = weights_to_place(module, current, device, dtype)
    S, T = side_lengths(sides)
    config = module.config
    refusal = run_refusal(config, options, S, T, dtype, device, weights, keep)
    if refusal:  # what earlier runs left unreferenced is counted once it is given back
        release_device_memory()
        refusal = run_refusal(config, options, S, T, dtype, device, weights, keep)
    if refusal:
        raise RunTooBig(refusal)
    with torch.inference_mode(False):  # plain tensors, not inference ones: their version counters see later edits
        if module_dtype(module) != dtype:
            convert_module(module, dtype)
        if current != device:
            module.to(device)


def dtype_name(module: Transformer) -> str:
    """The precision the weights run in: 'float32', 'bfloat16', ..."""
    return str(module.sinusoid.dtype).removeprefix("torch.")
