"""A patching map's runs (issue 37): run B again with each of many patches of run A, each run resumed at its
patched layer from run B's own layer inputs and recording nothing but the logits.

One recorded run of B (the LiveModel's run cache keeps its layer inputs, engine/runcache.py) and then, for
each patch, only the layers from the patched one on: a 12-layer map costs about half the forwards it replaces
(benchmarks/patching_bench.py). Each cell's logits equal those of a recorded patched run
(`LiveModel.trace(options=RunOptions(patch=(p,)))`, tests/engine/test_patching_map.py). Qt-free.

The cells: `residual_cells` (a layer's output row at each position: layers × positions) and `head_cells` (one
head's context at every position: layers × heads), both of run A's values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from typing import TYPE_CHECKING

import torch

from attnlab.engine import names, replay
from attnlab.engine.live_inputs import side_lengths
from attnlab.engine.memory import RunTooBig
from attnlab.engine.options import RunOptions
from attnlab.engine.output_budget import memory_refusal
from attnlab.engine.patching import Patch, PatchError, PatchSource
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_budget import run_refusal
from attnlab.engine.run_inputs import Resume
from attnlab.engine.trace import Trace

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.live_inputs import Prompt

# what a map sweeps: a layer's output per position, a self-attention head's context, a cross-attention head's
MAP_KINDS = ("residual", "head", "cross")


def map_stack(trace: Trace) -> str:
    """The stack a map sweeps: the decoder's when the model has one (the answer is read there), else the encoder's."""
    return "dec" if trace.config.has_decoder else "enc"


def residual_cells(a: Trace, stack: str | None = None) -> list[list[Patch]]:
    """[layer][position]: each layer's output row at one position, from run A (the residual stream)."""
    stack = stack or map_stack(a)
    layers = a.config.n_decoder_layers if stack == "dec" else a.config.n_encoder_layers
    first = names.layer_out(names.layer(stack, 0))
    positions = a.device_value(first).shape[0]  # [T, d]
    rows = []
    for i in range(layers):
        whole = patch_from(a, names.layer_out(names.layer(stack, i)))
        rows.append([Patch(whole.entry, whole.source, None, p) for p in range(positions)])
    return rows


def head_cells(a: Trace, stack: str | None = None, kind: str = "self") -> list[list[Patch]]:
    """[layer][head]: one head's context at every position, from run A (`kind` "cross": cross-attention)."""
    stack = stack or map_stack(a)
    layers = a.config.n_decoder_layers if stack == "dec" else a.config.n_encoder_layers
    rows = []
    for i in range(layers):
        whole = patch_from(a, names.site_entry(names.site(names.layer(stack, i), kind), "context"))
        heads = whole.source.value.shape[0]  # [H, T, dk]
        rows.append([Patch(whole.entry, whole.source, h, None) for h in range(heads)])
    return rows


def cells_of(a: Trace, kind: str, stack: str | None = None, site: str = "self") -> list[list[Patch]]:
    """The map's cells of `kind` ("residual", "head" or "cross")."""
    if kind not in MAP_KINDS:
        raise PatchError(f"a patching map sweeps one of {', '.join(MAP_KINDS)}, not {kind!r}")
    if kind == "cross" and not (a.config.has_encoder and a.config.has_decoder):
        raise PatchError(f"this {a.config.arch} model has no cross-attention to patch")
    if kind == "residual":
        return residual_cells(a, stack)
    return head_cells(a, stack, "cross" if kind == "cross" else site)


def patched_logits(
    live: LiveModel,
    src: Prompt,
    tgt: Prompt,
    options: RunOptions,
    patches: Iterable[Patch],
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[torch.Tensor]:
    """The logits [T, V] of run B (src, tgt, options) with each patch in turn (host float32), each run resumed
    at the patch's layer and recording nothing; one at a time (a caller holding them all holds cells × T × V).
    Stops early when `stop()` says so. RunTooBig (one line) before the first patched run when one cannot fit
    beside the recorded run B (sweep_refusal)."""
    base = options.replace(patch=(), record=True)
    clean = live.trace(src, tgt, base)  # recorded: the run cache keeps its layer inputs
    inputs = live.reuse.last_inputs
    src, tgt = live.prompt_sides(src, tgt)
    types: dict[str, list[int]] = {}
    sides = live.inputs.sides(src, tgt, base, [], types)
    device = torch.device(clean.device)
    refusal = sweep_refusal(clean, options, *side_lengths(sides))
    if refusal:
        raise RunTooBig(refusal)
    ids_of = {side: torch.tensor([ids], device=device) for side, (_p, ids, _n) in sides.items()}  # [1, S|T]
    pad_of = {
        side: (torch.arange(len(ids), device=device) >= n_real)[None] for side, (_p, ids, n_real) in sides.items()
    }  # [1, S|T]
    src_types = torch.tensor([types["src"]], device=device) if "src" in types else None  # [1, S]
    lock = live._module_lock if live.placement is not None else nullcontext()
    for patch in patches:
        if stop():
            return
        asked = live.checked_options(options.replace(patch=(patch,), record=False))
        resolved = asked.resolved(live.config, dtype=str(clean.options.dtype))
        run = replay.run_of(live.module, resolved, ids_of, pad_of, src_types)
        stack, layer = patch.layer
        resume = None if inputs is None or (stack, layer) == ("enc", 0) else Resume(stack, layer, inputs)
        with lock, torch.inference_mode():
            logits = run(resume, Recorder(False, stable=True), None)  # [1, T, V], a recorded run's bits
        yield logits[0].float().cpu()


def sweep_refusal(clean: Trace, options: RunOptions, S: int, T: int) -> str:
    """Why a patched run of the map cannot fit beside the recorded run B `clean` (empty: it fits): its working
    memory and logits on B's device (run_budget.run_refusal of a run that records nothing, in B's precision),
    plus the host copy of its logits [T, V] in float32 that the map reads (output_budget.memory_refusal)."""
    config, dtype = clean.config, getattr(torch, clean.options.dtype)
    fast = options.replace(patch=(), record=False)
    refusal = run_refusal(config, fast, S, T, dtype, torch.device(clean.device), 0)
    if refusal:
        return f"a patching map's runs: {refusal[0].lower()}{refusal[1:]}"
    logits = max(S, T) * config.out_vocab_size * 4  # [T, V] float32 on the host
    refusal = memory_refusal("a patching map's run (its logits copied to the host)", logits)
    return f"{refusal}; no cell was computed" if refusal else ""


def patch_from(
    trace: Trace, entry: str, head: int | None = None, position: int | None = None, label: str = "A"
) -> Patch:
    """A patch of `entry` (one head, one position, both, or all of it) with its value in `trace` (run A)."""
    if entry not in trace:
        raise PatchError(f"{entry!r} is not in run {label}'s trace")
    value = trace.device_value(entry).detach()
    return Patch(entry, PatchSource(value, trace.config, label), head, position)


def same_run_shape(a: Trace, b: Trace) -> str:
    """Why traces a and b cannot be patched between ('' when they can): another model or another length."""
    if a.config != b.config:
        return "runs A and B are of different models: patch between two runs of the same model"
    for side in names.SIDES:
        tokens = names.side_entry(side, "ids")
        if tokens in a and tokens in b and a.device_value(tokens).shape != b.device_value(tokens).shape:
            n_a, n_b = a.device_value(tokens).shape[-1], b.device_value(tokens).shape[-1]
            return f"run A has {n_a} tokens and run B {n_b}: patch between runs of the same length"
    return ""


def check_pair(a: Trace, b: Trace) -> None:
    """PatchError in one line when runs A and B cannot be patched between (other models or lengths)."""
    problem = same_run_shape(a, b)
    if problem:
        raise PatchError(problem)
