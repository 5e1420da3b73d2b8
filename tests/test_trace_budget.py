"""The trace's size is known before the run; a trace that would not fit on the GPU is kept on the host."""

from __future__ import annotations

import pytest
import torch
from conftest import build_tiny_model

from attnlab.engine import budget
from attnlab.engine.budget import estimate_trace_bytes
from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder

SRC, TGT = "the black cat sees the small dog and the cat", "le chat noir voit"


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
    model = make(**changes)
    trace = model.trace(SRC, TGT, options)
    S, T = lengths(trace)
    estimate = estimate_trace_bytes(model.config, options, S, T)
    real = trace.stored_bytes()
    assert abs(estimate - real) <= 0.10 * real, f"estimate {estimate} vs stored {real}"


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

    monkeypatch.setattr("attnlab.engine.live.fits_on_device", full_gpu)
    sides = model._inputs(SRC, TGT, RunOptions(), [])
    notices: list[str] = []
    rec = model._recorder(torch.device("cuda"), RunOptions(), sides, notices)
    assert rec.host and calls and "MiB" in notices[0] and "GPU" in notices[0]
    monkeypatch.setattr("attnlab.engine.live.fits_on_device", lambda device, needed: (True, 1 << 40))
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
    a, b = plain.finish(), host.finish()
    assert a.names() == b.names()
    for name in a.names():
        assert torch.equal(a[name], b[name]), name


def test_the_cpu_always_fits():
    assert budget.fits_on_device(torch.device("cpu"), 1 << 60)[0]
