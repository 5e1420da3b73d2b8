"""Recording a run: the Recorder a forward pass writes into, the entries it keeps, their host copies, and
which entries a lean run keeps whole (the keep rules; the rest of a layer is recomputed on read, replay.py).

A leaf of the engine: it imports no model code (the model's layers import it), and nothing of the reading
side. The Trace (trace.py) reads what a Recorder collected; `trace.finish` makes one of it.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol

import torch

from attnlab.engine import names
from attnlab.engine.derived import Derived

Entry = torch.Tensor | list[str] | Derived

# What a recorded run stores of each layer (engine/budget.py counts each): WHOLE every entry; OUTPUTS only the
# layer's output, the rest recomputed on read; ATTENTION that and each site's Q, K, V and mask,
# so that an attention map is derived without running the layer again (LiveModel._keep picks it for a lean CPU
# run whenever the run fits the memory with them: a layer costs a CPU half a second at 512 tokens, seconds
# when long; OUTPUTS on a GPU, where a layer runs in milliseconds, or when memory is short).
Keep = str
WHOLE, OUTPUTS, ATTENTION = "whole", "outputs", "attention"
# names.step_of of what ATTENTION keeps; not a position bias (ALiBi, T5: [H, T, T], recomputed with its layer)
SITE_INPUTS = ("q", "k", "v", "mask")
REPLAY_RULE = "replay"  # the Derived rule of an entry recomputed with its layer (registered by replay.py)


def kept_whole(name: str, keep: Keep = OUTPUTS) -> bool:
    """Whether a lean run stores entry `name` as it is: everything outside the layers, each layer's output
    (the next layer's input, the residual stream the logit lens and the flow panels read), and with ATTENTION
    each site's Q, K, V and mask."""
    layer_name = names.layer_of(name)
    if layer_name is None or name == names.layer_out(layer_name):
        return True
    return keep == ATTENTION and names.site_of(name) is not None and names.step_of(name) in SITE_INPUTS


class LayerPlaceholders(Protocol):
    """What a Recorder of a lean run asks of its replay (replay.LayerReplay): which entries stay whole, and the
    placeholder that stands for any other entry of a layer."""

    keep: Keep

    def placeholder(self, name: str) -> Derived: ...

    def move_to_host(self) -> None: ...


_NOTHING = torch.empty(0)  # Recorder._last before anything is recorded: no recorded tensor is this one


class Recorder:
    """Collects tensors during a forward pass. When disabled, `__call__` returns at once: capture is free.

    Tensors arrive with a batch dimension and the first sequence of the batch is kept, detached, on the
    model's device: nothing is copied during or after the run. `derived()` keeps a rule instead of a value
    (the value is kept too when `eager`, which tests use to check every rule against the forward's numbers).
    With `host=True` each tensor is copied to (pinned) host memory as it is recorded, asynchronously: what a
    run does when its trace would not fit in GPU memory. With `replay` (a lean run, engine/replay.py) each
    tensor of a layer but its output is kept as a placeholder that runs the layer again when read.
    """

    __slots__ = ("enabled", "eager", "host", "replay", "stable", "_items", "_copies", "_direct", "_last", "_last_first")

    def __init__(
        self,
        enabled: bool = True,
        *,
        eager: bool = False,
        host: bool = False,
        replay: LayerPlaceholders | None = None,
        stable: bool = False,
    ):
        self.enabled = enabled
        # a run that records nothing but must equal a recorded run to the bit (engine/patch_sweep.py): its
        # attention takes the recording's arithmetic (engine/row_stable.py), not the fused kernel
        self.stable = stable
        self.eager = eager
        self.host = host
        self.replay = replay
        self._items: OrderedDict[str, Entry] = OrderedDict()
        # host=True: storage key -> (the recorded tensor, weakly; its host copy); see _host_copy
        self._copies: dict[tuple, tuple[weakref.ref, torch.Tensor]] = {}
        # `add` may store straight into the entries unless every tensor must pass through `__call__`: host
        # copies, or a subclass that keeps its own selection (training/evaluate.py's cross-attention recorder)
        self._direct = not host and replay is None and type(self).__call__ is Recorder.__call__
        # (batched tensor, its first sequence) of the last tensor recorded: the next entry is often the same
        # tensor under another name (a residual sum is the next norm's input, a norm's output the layer's),
        # which then shares that view instead of making its own
        self._last, self._last_first = _NOTHING, _NOTHING

    def __call__(self, name: str, tensor: torch.Tensor, batched: bool = True) -> None:
        if not self.enabled:
            return
        if not batched:
            t = tensor
        else:
            if tensor is not self._last:
                self._last, self._last_first = tensor, tensor[0]
            t = self._last_first
        t = t.detach() if t.requires_grad else t  # detaching costs a dispatch per entry
        if self.replay is not None and not kept_whole(name, self.replay.keep):
            self._items[name] = self.replay.placeholder(name)
            return
        if self.host and off_host(t):
            t = self._host_copy(t)
        self._items[name] = t

    def _host_copy(self, t: torch.Tensor) -> torch.Tensor:
        """The host copy of device tensor `t`, one per tensor recorded under several names. A copy is reused
        only while the tensor it was made from is alive: once it is freed, the device allocator hands its
        address to the next tensor of that size, which must get its own copy."""
        key = storage_key(t)
        kept = self._copies.get(key)
        if kept is not None and kept[0]() is not None:
            return kept[1]
        owner = t._base if t._base is not None else t  # alive => its memory is not anyone else's
        copy = to_host_async(t)
        self._copies[key] = (weakref.ref(owner), copy)
        return copy

    def recompute_layers(self, replay: LayerPlaceholders) -> None:
        """From now on keep each layer's entries but its output as placeholders `replay` computes on read."""
        self.replay = replay
        self._direct = False

    def derived(
        self,
        name: str,
        value: torch.Tensor | None,
        rule: str,
        inputs: tuple[str, ...],
        *params: object,
        batched: bool = True,
    ) -> None:
        """Record `name` as RULES[rule](*inputs, *params); `value` is what the forward computed (kept only
        when eager)."""
        if not self.enabled:
            return
        if self.eager:
            assert value is not None, "an eager recorder is given every value"
            self(name, value, batched)
        else:
            self._items[name] = Derived(rule, tuple(inputs), tuple(params))

    def rule(self, value: torch.Tensor, rule: Derived) -> torch.Tensor | Derived:
        """What `add` should record for an entry derivable by `rule`: the rule, or the value when eager."""
        return value if self.eager else rule

    def add(self, entries: Iterable[tuple[str, torch.Tensor | Derived]]) -> None:
        """Record several entries in one go, in order: batched tensors (the first sequence is kept, as in
        `__call__`) and `Derived` rules (pass `rule(value, rule)` so that an eager recorder keeps the value).
        One call per sub-layer instead of one per entry: recording stays cheap next to the arithmetic."""
        if not self.enabled:
            return
        if not self._direct:
            for name, value in entries:
                self._put(name, value)
            return
        items = self._items
        last, last_first = self._last, self._last_first
        for name, value in entries:
            if isinstance(value, Derived):
                items[name] = value
                continue
            if value is not last:
                last, last_first = value, value[0]
            t = last_first
            items[name] = t.detach() if t.requires_grad else t
        self._last, self._last_first = last, last_first

    def _put(self, name: str, value: torch.Tensor | Derived) -> None:
        if isinstance(value, Derived):
            self._items[name] = value
        else:
            self(name, value)

    def __contains__(self, name: str) -> bool:
        return name in self._items

    def resume_from(self, entries: OrderedDict[str, Entry]) -> None:
        """Start with a previous run's entries (those before the layer a resumed run starts at)."""
        self._items.update(entries)

    def tokens(self, name: str, tokens: list[str]) -> None:
        if self.enabled:
            self._items[name] = list(tokens)

    def entries(self) -> OrderedDict[str, Entry]:
        """The recorded entries, ready to be read (no copies: they cross to the host on demand). What a Trace
        is made of: `finish` builds it here, LiveModel after adding the output entries."""
        self._last, self._last_first = _NOTHING, _NOTHING  # the trace needs no batched tensor
        if self._copies:  # host=True: the asynchronous copies must land before anyone reads them
            torch.cuda.synchronize()
            self._copies.clear()
        return self._items


def off_host(t: torch.Tensor) -> bool:
    """Whether `t` lives off the host (on a GPU): reading it means a copy."""
    return t.device.type != "cpu"


def to_host_async(t: torch.Tensor) -> torch.Tensor:
    """A host copy of a device tensor, started without waiting (pinned memory, non_blocking); readers sync."""
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=torch.cuda.is_available())
    return host.copy_(t, non_blocking=True)


def host_dtype(t: torch.Tensor) -> torch.dtype:
    """The public dtype of an entry: int64 for integer tensors, float32 for the rest."""
    return torch.float32 if t.is_floating_point() else torch.int64


def copy_to_host(values: list[torch.Tensor], keep_pinned: bool = True) -> list[torch.Tensor]:
    """Host float32/int64 copies of `values`; CPU tensors of the right dtype come back as they are.

    Device tensors go through pinned buffers with non-blocking copies and one synchronisation for the batch;
    the dtype is changed on the host (no device temporary). `keep_pinned=False` hands back ordinary memory
    instead (one host copy more), and the pinned buffers go back to PyTorch's pinned cache for the next batch:
    what a read of everything does, so that a whole trace never sits in pinned memory."""
    off_device = [off_host(v) for v in values]
    landed = [
        torch.empty(v.shape, dtype=v.dtype, pin_memory=True).copy_(v, non_blocking=True) if away else v
        for v, away in zip(values, off_device, strict=True)
    ]
    if any(off_device):
        torch.cuda.synchronize()
    return [
        h if h.dtype == host_dtype(h) and (keep_pinned or not away) else h.to(host_dtype(h), copy=True)
        for h, away in zip(landed, off_device, strict=True)
    ]


def storage_key(t: torch.Tensor) -> tuple:
    """Two entries with this key hold the same numbers (one tensor recorded under two names, or views)."""
    return (t.device, t.dtype, t.data_ptr(), tuple(t.shape), t.stride())
