"""Whether a run fits before it starts (issue 23, "never killed"): its peak on the chosen device and precision
is the weights it must place there (moved from another device or converted to another dtype), the trace
(budget.estimate_trace_bytes) and the working memory of the forward (budget.working_bytes, plus the layer
activations of a fast run). A run that cannot fit is refused in one line with the numbers and what would make it
fit: fewer tokens, bfloat16. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.engine.budget import HEADROOM, estimate_trace_bytes, working_bytes
from attnlab.engine.config import ModelConfig
from attnlab.engine.memory import available_on, host_available
from attnlab.engine.options import RunOptions
from attnlab.engine.replay import WHOLE, Keep
from attnlab.limits import gb


@dataclass(frozen=True)
class RunNeeds:
    """Bytes a run needs on its device: weights it must place there, the trace, the working memory."""

    weights: int
    trace: int
    working: int

    @property
    def total(self) -> int:
        return self.weights + self.trace + self.working


def run_needs(
    config: ModelConfig, options: RunOptions, S: int, T: int, element: int, weights: int, keep: Keep = WHOLE
) -> RunNeeds:
    """RunNeeds of a run with a source of S and a decoder input of T tokens in `element`-byte floats;
    `weights`: the bytes of weights this run must place on its device first (0 when they are there); `keep`:
    what a lean run stores of its layers (engine/replay.py)."""
    L = max(S, T)
    if options.record:
        trace = estimate_trace_bytes(config, options, S, T, element, keep)
    else:  # the fast path keeps the logits; a layer's activations live while it runs
        trace = L * config.out_vocab_size * element
    working = working_bytes(config, options, S, T, element, keep) + 4 * L * config.d_model * element
    return RunNeeds(weights, trace, working)


def fitting_tokens(
    config: ModelConfig, options: RunOptions, S: int, T: int, element: int, weights: int, room: int, keep: Keep = WHOLE
) -> int:
    """The most tokens (of the longer side, the other kept) that fit `room`, 0 when none do."""
    low, high = 0, max(S, T)
    while low < high:
        mid = (low + high + 1) // 2
        s, t = (min(S, mid), min(T, mid))
        if run_needs(config, options, s, t, element, weights, keep).total <= room:
            low = mid
        else:
            high = mid - 1
    return low


def run_refusal(
    config: ModelConfig,
    options: RunOptions,
    S: int,
    T: int,
    dtype: torch.dtype,
    device: torch.device,
    weights: int,
    keep: Keep = WHOLE,
) -> str:
    """Why this run cannot fit `device` (empty: it fits). On a GPU the trace may go to the host instead
    (LiveModel._recorder), so the trace is counted against the GPU and the host together there."""
    element = torch.empty((), dtype=dtype).element_size()
    needs = run_needs(config, options, S, T, element, weights, keep)
    room = int(HEADROOM * available_on(device))
    if device.type == "cuda":
        room += int(HEADROOM * host_available()) if needs.weights + needs.working <= room else 0
    if needs.total <= room:
        return ""
    fits = fitting_tokens(config, options, S, T, element, weights, room, keep)
    name = str(dtype).removeprefix("torch.")
    parts = f"the trace {gb(needs.trace)}, working memory {gb(needs.working)}"
    if needs.weights:
        parts = f"the weights {gb(needs.weights)}, " + parts
    hints = [f"at most {fits:,} tokens fit" if fits else "no input this long fits"]
    if element > 2:
        hints.append("bfloat16 needs about half (precision 'stored' for bf16 weights, or dtype='bfloat16' at load)")
    where = "GPU memory" if device.type == "cuda" else "memory"
    return (
        f"This run needs about {gb(needs.total)} in {name} for {max(S, T):,} tokens ({parts}), but only "
        f"{gb(room)} of {where} is available: " + "; ".join(hints) + "."
    )
