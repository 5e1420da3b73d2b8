"""The trace's size is known before the run; a trace that would not fit on the GPU is kept on the host."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine import budget
from attnlab.engine.budget import estimate_trace_bytes
from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder
from tests.support.recorded import finished
from tests.support.tiny import build_tiny_model

SRC, TGT = "the black cat sees the small dog and the cat", "le chat noir voit"
LONG_SRC, LONG_TGT = " ".join([SRC] * 5), " ".join([TGT] * 12)  # 50 and 48 words: [H, T, T] matrices dominate
MiB = 1 << 20
# grouped-query attention: 4 Q heads share 2 K/V heads (1 in the Llama-shaped model)
GQA = {"n_heads": 4, "n_kv_heads": 2}
LLAMA = {
    "arch": "decoder-only",
    "n_heads": 4,
    "n_kv_heads": 1,
    "positional": "rotary",
    "rotary_layout": "half",
    "norm": "rmsnorm",
    "ffn": "gated",
    "activation": "silu",
    "bias": False,
}


def make(**changes) -> LiveModel:
    return build_tiny_model(**{"d_model": 64, "d_ff": 128, "max_len": 64, **changes})


def lengths(trace) -> tuple[int, int]:
    return len(trace.get("src.tokens", [])), len(trace.get("tgt.tokens", []))


@pytest.mark.parametrize(
    "changes, options",
    [
        ({}, RunOptions()),
        ({"norm_first": True, "final_norm": True}, RunOptions(pad_to=20)),
        ({"arch": "decoder-only", "tgt_vocab_size": 3000}, RunOptions(residual=False, n_heads=8)),
        ({"arch": "encoder-only", "positional": "learned"}, RunOptions(scale=False)),
        ({}, RunOptions(n_heads=1, positional=False).with_custom_mask("enc.1.self", [(0, 1)])),
        ({}, RunOptions(projections=False, ablate=(("enc.0.self", 1, "zero"), ("dec.1.cross", 0, "mean")))),
    ],
)
def test_estimate_is_within_ten_percent_of_the_stored_bytes(changes, options):
    assert_estimate_close(make(**changes), options, SRC, TGT)


@pytest.mark.parametrize("src, tgt", [(SRC, TGT), (LONG_SRC, LONG_TGT)], ids=["short", "long"])
@pytest.mark.parametrize(
    "changes, options",
    [
        ({**GQA, "arch": "decoder-only"}, RunOptions()),
        ({**GQA, "arch": "decoder-only"}, RunOptions(n_heads=8)),  # a re-split: 8 Q heads read 4 K/V heads
        (GQA, RunOptions(ablate=(("enc.0.self", 1, "zero"), ("dec.1.cross", 0, "mean")))),
        (GQA, RunOptions(projections=False)),  # K = V = x: every head its own, nothing grouped
        (LLAMA, RunOptions()),
        (LLAMA, RunOptions(n_heads=16)),  # 16 Q heads of 4 floats read 4 K/V heads
        (LLAMA, RunOptions(projections=False)),  # Q and K still turned by the rotary positions: new tensors
    ],
    ids=["gqa", "gqa-resplit", "gqa-ablated", "gqa-no-projections", "llama", "llama-resplit", "llama-no-projections"],
)
def test_a_grouped_query_estimate_is_within_ten_percent_of_the_stored_bytes(changes, options, src, tgt):
    """Fewer K/V heads than Q heads: K and V are narrower; scores are derived from each Q head's shared K head."""
    model = make(**changes)
    assert model.config.kv_heads < model.config.n_heads
    assert_estimate_close(model, options, src, tgt)


def assert_estimate_close(model: LiveModel, options: RunOptions, src: str, tgt: str) -> None:
    trace = model.trace(src, tgt, options)
    S, T = lengths(trace)
    estimate = estimate_trace_bytes(model.config, options, S, T)
    real = trace.stored_bytes()
    assert abs(estimate - real) <= 0.10 * real, f"estimate {estimate} vs stored {real} (S={S}, T={T})"


def test_stored_bytes_count_a_shared_tensor_once():
    model = make()
    trace = model.trace(SRC, TGT)
    resid, norm_in = trace.entries["enc.0.resid1"], trace.entries["enc.0.norm1.in"]
    assert resid.data_ptr() == norm_in.data_ptr()  # post-norm: the LayerNorm reads the residual sum itself
    unique: dict[int, int] = {}  # storage -> bytes (src.pos and tgt.pos are two slices of one table)
    naive = 0
    for value in trace.entries.values():
        if isinstance(value, torch.Tensor):
            nbytes = value.numel() * value.element_size()
            naive += nbytes
            unique[value.untyped_storage().data_ptr()] = max(nbytes, unique.get(value.untyped_storage().data_ptr(), 0))
    assert trace.stored_bytes() == sum(unique.values())
    assert naive - trace.stored_bytes() >= 4 * resid.numel() * resid.element_size()  # 4 encoder norms alias


def test_a_trace_that_would_not_fit_is_recorded_to_the_host_and_says_so(monkeypatch):
    """The decision path on a machine without a GPU: pretend the device is a full GPU."""
    model = make()
    calls = []

    def full_gpu(device, needed):
        calls.append(needed)
        return False, 1 << 20

    monkeypatch.setattr("attnlab.engine.live_placement.fits_on_device", full_gpu)
    sides = model._inputs(SRC, TGT, RunOptions(), [])
    notices: list[str] = []
    rec = model._recorder(torch.device("cuda"), RunOptions(), sides, notices)
    assert rec.host and calls and "MiB" in notices[0] and "GPU" in notices[0]
    monkeypatch.setattr("attnlab.engine.live_placement.fits_on_device", lambda device, needed: (True, 1 << 40))
    assert not model._recorder(torch.device("cuda"), RunOptions(), sides, []).host


def test_a_host_recorder_gives_the_same_trace():
    model = make()
    vocab = model.config.src_vocab_size
    src = torch.randint(4, vocab, (1, 7))  # [1, S]
    tgt = torch.randint(4, vocab, (1, 5))  # [1, T]
    plain, host = Recorder(True), Recorder(True, host=True)
    with torch.inference_mode():
        model.module(src, tgt, rec=plain)
        model.module(src, tgt, rec=host)
    a, b = finished(plain, model.config), finished(host, model.config)
    assert a.names() == b.names()
    for name in a.names():
        assert torch.equal(a[name], b[name]), name


def test_the_cpu_always_fits():
    assert budget.fits_on_device(torch.device("cpu"), 1 << 60)[0]


def pretend_gpu(monkeypatch, driver_free: int, reserved: int, allocated: int) -> list[torch.device]:
    """torch.cuda's memory queries answering as a GPU would; returns the devices they were asked about."""
    asked: list[torch.device] = []

    def answer(value):
        def query(device):
            asked.append(device)
            return value

        return query

    monkeypatch.setattr(torch.cuda, "mem_get_info", answer((driver_free, 80 * 1024 * MiB)))
    monkeypatch.setattr(torch.cuda, "memory_reserved", answer(reserved))
    monkeypatch.setattr(torch.cuda, "memory_allocated", answer(allocated))
    return asked


def test_free_gpu_memory_counts_what_the_caching_allocator_holds_unused(monkeypatch):
    """After a big trace is dropped its blocks stay reserved by PyTorch: free to this process, not to the driver."""
    gpu = torch.device("cuda")
    asked = pretend_gpu(monkeypatch, driver_free=100 * MiB, reserved=500 * MiB, allocated=200 * MiB)
    assert budget.fits_on_device(gpu, 300 * MiB) == (True, 400 * MiB)  # 100 + (500 - 200); the driver alone: no
    assert asked == [gpu, gpu, gpu]
    assert budget.fits_on_device(gpu, 370 * MiB) == (False, 400 * MiB)  # more than HEADROOM of 400 MiB


@pytest.mark.parametrize("failing", ["mem_get_info", "memory_reserved", "memory_allocated"])
@pytest.mark.parametrize(
    "error", [RuntimeError("CUDA driver error"), torch.AcceleratorError("CUDA error: unspecified launch failure")]
)
def test_a_gpu_that_cannot_be_queried_is_taken_as_full(monkeypatch, failing, error):
    """A driver error while asking must not fail the run: the trace goes to the host."""
    pretend_gpu(monkeypatch, driver_free=64 * 1024 * MiB, reserved=0, allocated=0)

    def broken(device):
        raise error

    monkeypatch.setattr(torch.cuda, failing, broken)
    assert budget.fits_on_device(torch.device("cuda"), 1) == (False, -1)
