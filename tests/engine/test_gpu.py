"""On a CUDA GPU the engine computes the same trace as on the CPU. Skipped where no GPU is present."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine.options import RunOptions

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SRC, TGT = "the black cat sees the dog", "le chat noir"


def assert_same_trace(gpu, cpu, tol=1e-4):
    assert gpu.names() == cpu.names()
    for name, value in cpu.items():
        other = gpu[name]
        if isinstance(value, list):
            assert other == value, name
            continue
        assert other.device.type == "cpu" and other.dtype == value.dtype, name
        finite = torch.isfinite(value)
        assert torch.equal(finite, torch.isfinite(other)), f"{name}: -inf cells differ"
        err = (other[finite] - value[finite]).abs().max().item() if finite.any() else 0.0
        assert err <= tol, f"{name}: cuda and cpu differ by {err:.2e}"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"norm_first": True, "final_norm": True},
        {"positional": "rotary"},
        {"arch": "decoder-only"},
        {"arch": "encoder-only", "activation": "gelu"},
    ],
)
def test_cuda_trace_equals_cpu_trace(changes, tiny_model):
    model = tiny_model(**changes)
    cpu = model.trace(SRC, TGT, RunOptions(device="cpu"))
    gpu = model.trace(SRC, TGT, RunOptions(device="cuda"))
    assert gpu.device.startswith("cuda") and cpu.device == "cpu"
    assert_same_trace(gpu, cpu)


def test_cuda_what_if_toggles_and_fast_path_equal_cpu(tiny_model):
    model = tiny_model()
    opts = (
        RunOptions(norm="pre", n_heads=8, pad_to=10, scale=False)
        .with_custom_mask("enc.0.self", [(1, k) for k in range(10)])  # query 1 may look nowhere
        .with_causal("enc.self", True)
    )
    assert_same_trace(
        model.trace(SRC, TGT, opts.replace(device="cuda")), model.trace(SRC, TGT, opts.replace(device="cpu"))
    )
    fast_gpu = model.trace(SRC, TGT, opts.replace(device="cuda", record=False))
    fast_cpu = model.trace(SRC, TGT, opts.replace(device="cpu", record=False))
    assert torch.isfinite(fast_gpu["logits"]).all()
    assert (fast_gpu["logits"] - fast_cpu["logits"]).abs().max() <= 1e-4


def test_auto_device_picks_cuda(tiny_model):
    model = tiny_model()
    trace = model.trace(SRC, TGT, RunOptions(device="auto"))
    assert trace.device.startswith("cuda")
    assert model.device.type == "cuda"
