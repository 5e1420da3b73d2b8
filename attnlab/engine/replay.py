"""Layers recomputed on read: what keeps a long run's trace O(layers · T · d) (issue 23).

A full recorded trace keeps every layer's Q, K, V, context, norms and feed-forward tensors: about 40 GiB for
a Llama-3-8B shape at 8,192 tokens, 350 MiB for GPT-2 small at 512. A *lean* run (LiveModel decides, by the
trace's size) keeps only what enters each layer (the previous layer's `out`, which the trace keeps anyway),
the stack-level entries and the logits; each other entry of a layer is a `Derived` "replay" placeholder.
Reading one runs that layer again, alone, from its kept input, with the run's own options, ids and masks
(`Resume(only=True)`: the forward stops after it, run_inputs.LayerDone), and takes the entry from the layer's
fresh record. The same kernels on the same inputs give the same numbers: every entry equals the full trace's
bit for bit (tests/engine/test_replay.py). The last few replayed layers are kept, so a panel reading a layer's
entries one after another runs that layer once.

A replay needs the model as it was: the same module, weights, dtype and device. When any of them changed
(the model was closed, its precision switched, a weight written however it was: in place, through `.data`,
by load_state_dict), reading a replayed entry raises ReplayError, one line.
Qt-free.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.derived import Derived, register
from attnlab.engine.recorder import (
    ATTENTION,
    OUTPUTS,
    REPLAY_RULE,
    SITE_INPUTS,
    WHOLE,
    Keep,
    Recorder,
    kept_whole,
)
from attnlab.engine.run_inputs import MEMORY, LayerDone, LayerInputs, Resume
from attnlab.engine.weights_print import weights_print

__all__ = [  # the keep rules are recorder.py's (a Recorder applies them as it records), re-exported here
    "ATTENTION",
    "KEPT_LAYERS",
    "OUTPUTS",
    "RULE",
    "SITE_INPUTS",
    "WHOLE",
    "Keep",
    "LayerReplay",
    "ReplayError",
    "fingerprint",
    "kept_whole",
    "replayed",
    "run_of",
]

if TYPE_CHECKING:
    from attnlab.engine.model import Transformer
    from attnlab.engine.options import ResolvedOptions

KEPT_LAYERS = 2  # replayed layers kept (a panel and the next one; the model view steps layer by layer)
RULE = REPLAY_RULE


class ReplayError(ValueError):
    """A replayed entry can no longer be computed: the model it came from changed or was closed."""


def fingerprint(module: Transformer) -> tuple:
    """What must not change between a run and the replay of one of its layers: the weights (their version
    counters, storage, layout and sampled values: engine/weights_print.py, so a write through `.data` counts
    too), their dtype and their device."""
    return (*weights_print(module), module.sinusoid.dtype, module.sinusoid.device)


class LayerReplay:
    """Recomputes the layers of one lean run. `run(resume, rec)` is the run's own forward (the module with
    its ids, pads, token types and resolved options bound), `inputs` the LayerInputs that run kept."""

    def __init__(
        self,
        module: Transformer,
        run: Callable[..., Tensor],
        inputs: LayerInputs,
        lock: threading.RLock | None = None,
        keep: Keep = OUTPUTS,
        on_host: bool = False,
    ):
        self.keep = keep
        self._module = weakref.ref(module)
        self._run = run
        self._inputs = inputs
        self._lock = lock or threading.RLock()
        self._fingerprint = fingerprint(module)
        self._layers: OrderedDict[tuple[str, int], OrderedDict] = OrderedDict()
        # the trace lives on the host (copied there as recorded, or moved later): replayed entries land there too
        self._on_host = on_host
        self.replays = 0  # layers run again so far (tests and benchmarks read it)

    def move_to_host(self) -> None:
        """Keep the layer inputs in host memory (Trace.move_to_host); a replay then brings its layer's input
        to the model's device and hands its entries back on the host."""
        with self._lock:
            if any(x.device.type != "cpu" for x in self._inputs.tensors.values()):
                self._inputs = LayerInputs({key: x.to("cpu") for key, x in self._inputs.tensors.items()})
            self._layers.clear()
            self._on_host = True

    def placeholder(self, name: str) -> Derived:
        """The trace entry that stands for `name` of a layer: its value is computed on read."""
        return Derived(RULE, (), (self, name))

    def value(self, name: str) -> Tensor:
        """The entry `name` of its layer, from the layer run again (or kept from the last replay)."""
        where = names.layer_position(name)
        if where is None:
            raise KeyError(f"{name!r} is not inside a layer")
        entries = self._layer(where)
        value = entries.get(name)
        if not isinstance(value, Tensor):
            raise KeyError(f"{name!r} was not recorded again by its layer")
        return value

    def _layer(self, where: tuple[str, int]) -> OrderedDict:
        with self._lock:
            kept = self._layers.get(where)
            if kept is not None:
                self._layers.move_to_end(where)
                return kept
            entries = self._replayed(where)
            self._layers[where] = entries
            while len(self._layers) > KEPT_LAYERS:
                self._layers.popitem(last=False)
            return entries

    def _replayed(self, where: tuple[str, int]) -> OrderedDict:
        module = self._module()
        if module is None:
            raise ReplayError("the model this run came from is closed: run the input again to see this layer")
        if fingerprint(module) != self._fingerprint:
            raise ReplayError(
                "the model's weights, precision or device changed since this run: run it again to see this layer"
            )
        rec = Recorder(True)
        device = module.sinusoid.device
        wanted = (where, MEMORY)  # the layer's input; an encoder-decoder's decoder layers read the memory too
        inputs = LayerInputs({key: x.to(device) for key, x in self._inputs.tensors.items() if key in wanted})
        with torch.inference_mode():
            try:
                self._run(Resume(where[0], where[1], inputs, only=True), rec)
            except LayerDone:
                pass
        self.replays += 1
        entries = rec.entries()
        if self._on_host:
            for name, value in entries.items():
                if isinstance(value, Tensor):
                    entries[name] = value.to("cpu")
        return entries


def run_of(
    module: Transformer,
    options: ResolvedOptions,
    ids: dict[str, Tensor],
    pads: dict[str, Tensor],
    types: Tensor | None,
) -> Callable[..., Tensor]:
    """The forward of one run, bound to its ids [1, S]/[1, T], pads and token types: what LayerReplay runs."""

    def run(resume: Resume | None, rec: object, inputs: LayerInputs | None = None) -> Tensor:
        return module(
            ids.get("src"),
            ids.get("tgt"),
            options=options,
            rec=rec,
            src_pad=pads.get("src"),
            tgt_pad=pads.get("tgt"),
            resume=resume,
            inputs=inputs,
            src_types=types,
        )

    return run


def replayed(replay: LayerReplay, name: str) -> Tensor:
    """RULES["replay"]: the value of a replayed entry."""
    return replay.value(name)


register(RULE, replayed)  # the Trace reads a replayed entry through derived.RULES
