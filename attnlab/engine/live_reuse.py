"""What a LiveModel keeps of its last runs, and how a new run reuses it.

A run that differs from the last one of its kind (recorded or fast) only in its output temperature reuses all
of that run's entries (`with_temperature`); a recorded run that differs only in masks resumes at the first
layer whose mask changed (engine/runcache.py). `RunCache` also remembers the traces it handed out, so that
the GPU memory of those still held elsewhere can be given back before a run that needs it (issue 23). One of
the three seams of engine/live.py (the others: input preparation, live_inputs.py; placement,
live_placement.py).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import torch

from attnlab.engine import names, option_rules
from attnlab.engine.adapter import AdapterWeights
from attnlab.engine.config import ModelConfig
from attnlab.engine.derived import Derived
from attnlab.engine.devices import free_device_memory_of
from attnlab.engine.live_inputs import Prompt
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Entry, Recorder
from attnlab.engine.run_inputs import LayerInputs, Resume
from attnlab.engine.runcache import entries_before, first_changed_layer
from attnlab.engine.trace import Trace
from attnlab.engine.weights_print import weights_print


def tempered_softmax(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / temperature) over the last dimension, safe for any temperature RunOptions accepts:
    the largest logit is subtracted first, so it becomes exactly 0 (its exp is 1) whatever the temperature,
    the others go to -inf at worst, and no NaN can appear. The argmax never changes.  [T, V] -> [T, V]"""
    shifted = logits - logits.amax(dim=-1, keepdim=True)  # [T, V], max 0
    return torch.softmax(shifted / temperature, dim=-1)


def output_probs(temperature: float) -> Derived:
    """The output distribution softmax(logits / temperature), [T, V], computed from `logits` when read."""
    return Derived("probs", (names.LOGITS,), (float(temperature),))


def with_temperature(trace: Trace, options: RunOptions, config: ModelConfig) -> Trace:
    """`trace` at another output temperature: the same stored entries (shared, not copied), a new `probs`."""
    entries = OrderedDict(trace.entries)
    entries[names.PROBS] = output_probs(options.temperature)
    # host copies already made stay valid; list(): the GUI thread may be adding copies to that trace meanwhile
    host = {n: v for n, v in list(trace._host.items()) if n != names.PROBS}
    info = dict(trace.info, compute_ms=0.0, reused="the previous run's entries (at most the temperature differs)")
    # the options asked for (they differ from the last run's only in fields whose change invalidates nothing
    # but the output: the option table's `invalidates`), in the precision the entries were computed in
    resolved = options.resolved(config, dtype=trace.options.dtype)
    return Trace(
        entries,
        config=config,
        options=resolved,
        device=trace.device,
        notices=trace.notices,
        info=info,
        _host=host,
    )


def reused_host_copies(old: Trace, kept: OrderedDict, entries: OrderedDict) -> dict[str, torch.Tensor]:
    """The host copies `old` made of the entries a resumed run `kept` (the same tensors: still valid)."""
    return {n: v for n, v in list(old._host.items()) if n in kept and entries[n] is kept[n]}  # list(): the GUI adds


def run_key(
    module: Transformer, src: Prompt, tgt: Prompt, options: RunOptions, adapter: AdapterWeights | None = None
) -> tuple:
    """What decides every entry of a run but the output softmax: inputs, options but those whose change
    invalidates at most the output (the temperature; option_rules.reuse_key), and the weights (their
    fingerprint, engine/weights_print.py: version counters, storage and sampled values, so a write through
    `.data` counts too). A LoRA `adapter` confined to the layers has its own writes forgiven (their version
    increments, the values of the weights it writes): its strength is in the options, engine/adapter.py."""
    forgiven = adapter.deltas if adapter is not None and adapter.confined else ()
    version, weights = weights_print(module, unsampled=forgiven)
    version -= adapter.bumps if adapter is not None else 0
    # (a spread-out model's layers are brought in by accelerate's hooks as inference tensors: no counter)
    src_key, tgt_key = (tuple(x) if isinstance(x, list) else x for x in (src, tgt))  # hashable
    return (src_key, tgt_key, option_rules.reuse_key(options), id(module), version, weights)


def same_but_options(a: tuple, b: tuple) -> bool:
    """Whether two run keys differ at most in their options (same text, weights and model)."""
    return a[:2] == b[:2] and a[3:] == b[3:]


class RunCache:
    """The last run of each kind, the recorded one's layer inputs, and the traces handed out that hold them."""

    def __init__(self) -> None:
        # the last run of each kind, recorded (True) or fast (False): {record: (what decided it, the trace)}.
        # Two, so that an ablated trace and its un-ablated baseline (present/ablation.py) both stay reusable
        # when only the temperature changes; a fast run holds little more than its logits.
        self.runs: dict[bool, tuple[tuple, Trace]] = {}
        self.last_inputs: LayerInputs | None = None  # the last recorded run's layer inputs (runcache.py)
        # {record: the traces handed out that hold that run's tensors (the run's, its temperature variants)}
        self.handed_out: dict[bool, list[weakref.ref]] = {True: [], False: []}
        # traces of earlier runs still held elsewhere (the one on screen, a pinned one), on the run's device
        self.displaced: list[weakref.ref] = []

    def reused(self, key: tuple, options: RunOptions, config: ModelConfig) -> Trace | None:
        """The last run of this kind at `options`' temperature when `key` decided it too; else None."""
        last = self.runs.get(options.record)
        if last is None or last[0] != key:
            return None
        warmer = with_temperature(last[1], options, config)
        self.handed_out[options.record].append(weakref.ref(warmer))  # it shares the run's tensors
        return warmer

    def prepare(self, key: tuple, record: bool, device: torch.device, config: ModelConfig) -> Resume | None:
        """Forget the kept runs nothing of which a run with `key` can reuse (the traces handed out of them
        become displaced), and say where a recorded run may resume (None: a full run)."""
        kept_before = set(self.runs)
        for kind, (kept_key, _trace) in list(self.runs.items()):
            if not same_but_options(kept_key, key):
                del self.runs[kind]
                if kind:
                    self.last_inputs = None
        resume = self.resume_point(key, device, config) if record else None
        if resume is None and record:  # the last recorded run's tensors are of no further use here
            self.runs.pop(True, None)
            self.last_inputs = None
        dropped = [ref for kind in kept_before - set(self.runs) for ref in self.handed_out.pop(kind, [])]
        self.displaced = [ref for ref in self.displaced + dropped if ref() is not None]
        return resume

    def resume_point(self, key: tuple, device: torch.device, config: ModelConfig) -> Resume | None:
        """Where a run with `key` may start, given the last one: at the first layer whose mask differs, when
        only masks differ and the last run's tensors are on `device`; None for a full run."""
        last, previous = self.runs.get(True), self.last_inputs
        if last is None or previous is None or not same_but_options(last[0], key):
            return None
        before, after = last[0][2], key[2]
        if not (before.record and after.record) or last[1].device != str(device):
            return None
        where = first_changed_layer(config, before, after)
        if where is None or where == ("enc", 0):  # the first encoder layer: nothing to reuse
            return None
        return Resume(where[0], where[1], previous)

    def free_displaced(self) -> None:
        """Move the displaced traces still held off the GPU (one trace at a time there when two do not fit)."""
        free_device_memory_of(self.displaced)
        self.displaced = []

    def resume_into(self, rec: Recorder, resume: Resume | None, inputs: LayerInputs | None) -> OrderedDict[str, Entry]:
        """Start `rec` (and `inputs`) with the last recorded run's entries (and layer inputs) before the layer
        `resume` starts at; those entries (empty for a full run)."""
        last = self.runs.get(True)
        if resume is None or last is None:
            return OrderedDict()
        if inputs is not None:
            inputs.tensors.update(resume.inputs_so_far().tensors)
        kept = entries_before(last[1].entries, resume.stack, resume.layer)
        rec.resume_from(kept)  # re-recording tokens and ids below keeps their places
        return kept

    def host_copies(self, kept: OrderedDict, entries: OrderedDict) -> dict[str, torch.Tensor]:
        """The host copies the last recorded run made of the entries a resumed run `kept`."""
        last = self.runs.get(True)
        return reused_host_copies(last[1], kept, entries) if kept and last is not None else {}

    def store(self, key: tuple, trace: Trace, record: bool, resume: Resume | None, inputs: LayerInputs | None) -> None:
        """Keep `trace` as the last run of its kind (a resumed run shares the tensors of those handed out)."""
        self.runs[record] = (key, trace)
        sharing = self.handed_out[record] if resume is not None else []
        self.handed_out[record] = [*sharing, weakref.ref(trace)]
        if record:
            self.last_inputs = inputs
