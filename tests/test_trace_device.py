"""The trace lives where the model ran and crosses to the host only when read: whole entries (cached), single
slices (not cached), or everything at once (`to("cpu")`, `save_npz`). The CUDA tests run where a GPU is."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import build_tiny_model as make

from attnlab.engine.derived import Derived
from attnlab.engine.options import RunOptions

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
    monkeypatch.setattr("attnlab.engine.live.fits_on_device", lambda device, needed: (False, 1 << 20))
    trace = model.trace(SRC, TGT, RunOptions(device="cuda"))
    stored = [v for v in trace.entries.values() if isinstance(v, torch.Tensor)]
    assert all(v.device.type == "cpu" and v.is_pinned() for v in stored)
    assert any("MiB" in n for n in trace.notices)
    monkeypatch.undo()
    reference = make().trace(SRC, TGT, RunOptions(device="cpu"))
    torch.testing.assert_close(trace["dec.1.cross.weights"], reference["dec.1.cross.weights"], atol=1e-4, rtol=1e-4)


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
