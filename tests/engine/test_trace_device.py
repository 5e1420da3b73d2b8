"""The trace lives where the model ran and crosses to the host only when read: whole entries (cached), single
slices (not cached), or everything at once (`to("cpu")`, `save_npz`). The CUDA tests run where a GPU is."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.engine.derived import Derived
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder, host_dtype
from tests.support.recorded import finished
from tests.support.tiny import build_tiny_model as make

SRC, TGT = "the black cat sees the dog", "le chat noir"


def test_reading_a_slice_moves_only_that_slice_and_caches_nothing():
    trace = make().trace(SRC, TGT)
    for name in ("dec.1.cross.weights", "dec.1.cross.masked", "enc.0.self.scores"):
        head = trace.read(name, 2)
        assert name not in trace._host
        assert head.dtype == torch.float32 and head.device.type == "cpu"
        assert torch.equal(head, trace[name][2]) and torch.equal(trace.slice(name, 2), head)
    assert torch.equal(trace.read("probs", (-1, slice(0, 5))), trace["probs"][-1, :5])


def test_public_dtypes_and_caching():
    trace = make().trace(SRC, TGT)
    assert trace["src.ids"].dtype == torch.int64 and trace["tgt.tokens"] == ["<s>", "le", "chat", "noir"]
    weights = trace["dec.0.cross.weights"]
    assert weights.dtype == torch.float32 and trace["dec.0.cross.weights"] is weights  # read once
    masked, scores = trace.fetch(["dec.0.self.masked", "dec.0.self.scores"])
    assert masked.shape == scores.shape == (4, 4, 4)
    with pytest.raises(KeyError, match="not in this trace"):
        trace.fetch(["dec.0.self.masked", "nope"])
    assert trace.get("nope", 5) == 5 and "dec.0.self.masked" in trace


def test_to_cpu_and_save_npz_materialise_everything(tmp_path):
    trace = make(norm_first=True).trace(SRC, TGT, RunOptions(pad_to=9))
    assert any(isinstance(v, Derived) for v in trace.entries.values())
    concrete = trace.to("cpu")
    assert concrete.names() == trace.names() and concrete.options == trace.options
    assert not any(isinstance(v, Derived) for v in concrete.entries.values())
    for name in trace.names():
        if not isinstance(trace[name], list):
            assert torch.equal(concrete.entries[name], trace[name]), name
    trace.save_npz(tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as saved:
        assert set(saved.files) - {"__notices__"} == set(trace.names())
        assert np.array_equal(saved["enc.1.self.scaled"], trace["enc.1.self.scaled"].numpy())


@pytest.mark.parametrize("changes", [{}, {"arch": "decoder-only", "norm_first": True}])
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_the_trace_stays_on_the_gpu_and_reads_equal_the_cpu(changes):
    model = make(**changes)
    cpu = model.trace(SRC, TGT, RunOptions(device="cpu"))
    gpu = model.trace(SRC, TGT, RunOptions(device="cuda"))
    stored = [v for v in gpu.entries.values() if isinstance(v, torch.Tensor)]
    assert stored and all(v.device.type == "cuda" for v in stored)
    assert not gpu._host  # nothing crossed yet
    site = gpu.sites()[-1]
    head = gpu.read(f"{site}.weights", 1)
    assert head.device.type == "cpu" and not gpu._host
    torch.testing.assert_close(head, cpu[f"{site}.weights"][1], atol=1e-4, rtol=1e-4)
    for name in cpu.names():
        a, b = gpu[name], cpu[name]
        if isinstance(b, list):
            assert a == b
            continue
        assert a.device.type == "cpu" and a.dtype == b.dtype, name
        assert torch.equal(a.isinf(), b.isinf()), name
        torch.testing.assert_close(a.nan_to_num(0.0, 0.0, 0.0), b.nan_to_num(0.0, 0.0, 0.0), atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_a_host_recorder_copies_into_pinned_memory(monkeypatch):
    model = make()
    monkeypatch.setattr("attnlab.engine.live_placement.fits_on_device", lambda device, needed: (False, 1 << 20))
    trace = model.trace(SRC, TGT, RunOptions(device="cuda"))
    stored = [v for v in trace.entries.values() if isinstance(v, torch.Tensor)]
    assert all(v.device.type == "cpu" and v.is_pinned() for v in stored)
    assert any("MiB" in n for n in trace.notices)
    monkeypatch.undo()
    reference = make().trace(SRC, TGT, RunOptions(device="cpu"))
    for name in reference.names():
        if not isinstance(reference[name], list):
            a, b = (t.nan_to_num(0.0, 0.0, 0.0) for t in (trace[name], reference[name]))
            torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4, msg=name)


def pretend_the_host_is_a_device(monkeypatch):
    """Make the recorder treat CPU tensors as device tensors: copy each (a clone stands in for the pinned
    copy) and drop the original, as a GPU run that does not fit does. Freed CPU memory is handed out again
    like a GPU allocator's, so a copy reused by address alone would give one entry another's numbers."""
    monkeypatch.setattr("attnlab.engine.recorder.off_host", lambda t: True)
    monkeypatch.setattr("attnlab.engine.recorder.to_host_async", lambda t: t.clone())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)


@pytest.mark.parametrize("width", [{}, {"d_model": 512, "d_ff": 2048}])
def test_a_host_recorder_gives_each_entry_its_own_numbers(monkeypatch, width):
    model = make(**width)
    src = torch.randint(4, model.config.src_vocab_size, (1, 7))  # [1, S]
    tgt = torch.randint(4, model.config.tgt_vocab_size, (1, 5))  # [1, T]
    kept_on_device = Recorder(True)
    with torch.inference_mode():
        model.module(src, tgt, rec=kept_on_device)
    pretend_the_host_is_a_device(monkeypatch)
    copied = Recorder(True, host=True)
    with torch.inference_mode():
        model.module(src, tgt, rec=copied)
    device_trace, host_trace = finished(kept_on_device, model.config), finished(copied, model.config)
    monkeypatch.undo()  # reading: the copies are host tensors again
    for name in device_trace.names():
        if isinstance(device_trace.entries[name], torch.Tensor):
            assert torch.equal(host_trace[name], device_trace[name]), name
    # a tensor recorded under two names is still copied once (a post-norm residual sum is the norm's input)
    assert host_trace.entries["enc.0.resid1"] is host_trace.entries["enc.0.norm1.in"]


def test_a_device_trace_computes_derived_entries_from_device_values_only(monkeypatch):
    """Reading whole entries caches host copies; a derived entry read later must not take a cached host copy
    as its input while its other inputs are on the device. The `meta` device stands in for a GPU."""
    trace = make().trace(SRC, TGT)
    for name, value in list(trace.entries.items()):
        if isinstance(value, torch.Tensor):
            trace.entries[name] = value.to("meta")

    def copy_meta_to_host(values, keep_pinned=True):
        return [torch.zeros(v.shape, dtype=host_dtype(v)) for v in values]  # the shape is all meta knows

    monkeypatch.setattr("attnlab.engine.trace.copy_to_host", copy_meta_to_host)
    for name in trace.names():  # run order: scores, scaled, weights are read (and cached) before context
        value = trace[name]
        if not isinstance(value, list):
            assert value.device.type == "cpu", name
            assert trace.read(name, 0).shape == value.shape[1:], name


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only"])
def test_a_slice_computed_alone_equals_the_slice_of_the_whole(arch):
    """read(name, i) of a derived entry computes only that head (or position); the numbers are the same."""
    options = RunOptions(pad_to=9).with_custom_mask("dec.self", [(2, 0), (2, 1), (2, 2)])
    first, second = make(arch=arch).trace(SRC, TGT, options), make(arch=arch).trace(SRC, TGT, options)
    for name in first.names():
        if isinstance(first.entries[name], Derived) and not name.endswith(".concat"):
            for i in (0, 2, -1):
                alone = first.read(name, i)
                assert torch.equal(alone.isinf(), second[name][i].isinf()), name
                assert torch.equal(alone.nan_to_num(), second[name][i].nan_to_num()), (name, i)


def test_reading_everything_copies_in_batches_and_frees_each_on_the_device(monkeypatch):
    """to("cpu") of a trace larger than one batch: derived values are computed and copied a batch at a time,
    in ordinary memory; a panel's read of one entry stays one pinned batch."""
    from attnlab.engine import trace as trace_module

    whole = make().trace(SRC, TGT).to("cpu")
    trace = make().trace(SRC, TGT)
    batches: list[tuple[int, bool]] = []  # (bytes, keep_pinned) of each copy
    real_copy = trace_module.copy_to_host

    def counting_copy(values, keep_pinned=True):
        batches.append((sum(v.numel() * v.element_size() for v in values), keep_pinned))
        return real_copy(values, keep_pinned)

    limit = 4096
    monkeypatch.setattr(trace_module, "COPY_BATCH_BYTES", limit)
    monkeypatch.setattr(trace_module, "copy_to_host", counting_copy)
    trace["enc.0.self.weights"]
    assert batches == [(4 * 7 * 7 * 4, True)]  # [H, S, S] float32, one pinned batch
    batches.clear()
    concrete = trace.to("cpu")
    largest = max(v.numel() * v.element_size() for v in concrete.entries.values() if isinstance(v, torch.Tensor))
    assert len(batches) > 5
    assert all(size < limit + largest for size, _pinned in batches)
    assert not any(pinned for _size, pinned in batches)
    for name in whole.names():
        a, b = concrete.entries[name], whole.entries[name]
        assert a == b if isinstance(b, list) else torch.equal(a.nan_to_num(), b.nan_to_num()), name


def test_a_lean_trace_copied_to_the_host_recomputes_its_layers_onto_the_host(monkeypatch):
    """A run too big for the GPU copies its steps to the host as they are recorded; when it is also lean
    (engine/replay.py), its recomputed layers must land on the host too, or a derived map would mix a host
    copy and a device tensor. The host stands in for the device as above."""
    from attnlab.engine.live import LiveModel
    from attnlab.engine.replay import RULE
    from tests.support.tiny import assert_same_trace

    whole = make().trace(SRC, TGT)
    model = make()
    model.lean_above = 0
    monkeypatch.setattr(LiveModel, "_recorder", lambda self, *a, **k: Recorder(True, host=True))
    pretend_the_host_is_a_device(monkeypatch)
    lean = model.trace(SRC, TGT)
    monkeypatch.undo()
    replays = {e.params[0] for e in lean.entries.values() if getattr(e, "rule", None) == RULE}
    assert replays and all(r._on_host for r in replays)
    assert_same_trace(whole, lean)
