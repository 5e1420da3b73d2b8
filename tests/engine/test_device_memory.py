"""A GPU that runs out of memory costs a run its speed, never its result: the run is computed on the CPU and
says so. Simulated on the CPU: the GPU run raises what PyTorch raises when an allocation fails."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine import live, live_placement
from attnlab.engine.gpu_failures import FELL_BACK
from attnlab.engine.live import LiveModel, out_of_device_memory
from attnlab.engine.options import RunOptions
from tests.support.tiny import build_tiny_model as make

SRC, TGT = "the black cat sees the dog", "le chat noir"
GPU = torch.device("cuda", 0)  # only a name here: every run "on" it fails before touching CUDA


def fail_on_the_gpu(monkeypatch, error: Exception) -> list[torch.device]:
    """Runs asked of the GPU raise `error`; CPU runs go ahead. Returns the devices asked for, in order."""
    asked: list[torch.device] = []
    cpu_run = LiveModel._trace_on

    def trace_on(self, device, *args, **kwargs):
        asked.append(device)
        if device.type != "cpu":
            raise error
        return cpu_run(self, device, *args, **kwargs)

    monkeypatch.setattr(live, "pick_device", lambda requested: GPU)
    monkeypatch.setattr(LiveModel, "_trace_on", trace_on)
    return asked


@pytest.mark.parametrize(
    "error",
    [
        torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        RuntimeError("CUDA error: out of memory"),  # a pinned host buffer that could not be allocated
    ],
)
def test_a_run_the_gpu_has_no_memory_for_is_computed_on_the_cpu(monkeypatch, error):
    reference = make().trace(SRC, TGT, RunOptions(device="cpu"))
    model = make()
    asked = fail_on_the_gpu(monkeypatch, error)
    trace = model.trace(SRC, TGT, RunOptions(device="cuda"))
    assert asked == [GPU, torch.device("cpu")]
    assert trace.device == "cpu"
    assert trace.notices[-1] == "The GPU ran out of memory; this run was computed on the CPU instead."
    for name in reference.names():
        a, b = trace[name], reference[name]
        assert a == b if isinstance(b, list) else torch.equal(a.nan_to_num(), b.nan_to_num()), name
    # the next toggle that only changes the temperature reuses the CPU run: nothing runs again
    warmer = model.trace(SRC, TGT, RunOptions(device="cuda", temperature=2.0))
    assert len(asked) == 2 and warmer.entries["dec.0.self.q"] is trace.entries["dec.0.self.q"]


def test_other_gpu_errors_are_not_taken_for_a_full_memory(monkeypatch):
    model = make()
    asked = fail_on_the_gpu(monkeypatch, RuntimeError("CUDA error: an illegal memory access was encountered"))
    with pytest.raises(RuntimeError, match="illegal memory access"):
        model.trace(SRC, TGT, RunOptions(device="cuda"))
    assert asked == [GPU]


def test_what_counts_as_out_of_memory():
    assert out_of_device_memory(torch.cuda.OutOfMemoryError("CUDA out of memory."))
    assert out_of_device_memory(RuntimeError("CUDA error: out of memory"))
    assert not out_of_device_memory(RuntimeError("Expected all tensors to be on the same device"))
    assert not out_of_device_memory(ValueError("out of memory"))  # not an error torch raises for memory


def test_after_a_fallback_a_run_at_least_as_long_goes_to_the_cpu_at_once(monkeypatch):
    """The size that failed is remembered: the GPU is not tried again for a run as long or longer, and is for
    a shorter one (which may fit)."""
    placed: list[str] = []
    cpu_place = LiveModel._place

    def place(self, device, options, sides, lean=False):
        placed.append(device.type)
        if device.type != "cpu":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return cpu_place(self, device, options, sides, lean)

    monkeypatch.setattr(live, "pick_device", lambda requested: GPU)
    monkeypatch.setattr(LiveModel, "_place", place)
    model = make()
    first = model.trace("the black cat", "le chat noir", RunOptions(device="cuda"))
    assert placed == ["cuda", "cpu"] and first.notices[-1] == FELL_BACK
    longer = model.trace("the black cat sees the dog", "le chat noir", RunOptions(device="cuda"))
    assert placed[2:] == ["cpu"]  # not tried on the GPU
    assert longer.notices[-1].startswith("Runs of 4 tokens or more ran out of GPU memory before; this one (7 tokens)")
    fast = model.trace("the black cat sees the dog", "le chat noir", RunOptions(device="cuda", record=False))
    assert placed[3:] == ["cuda", "cpu"] and fast.notices[-1] == FELL_BACK  # another kind of run: tried
    shorter = model.trace("the cat", "le chat", RunOptions(device="cuda"))
    assert placed[5:] == ["cuda", "cpu"] and shorter.notices[-1] == FELL_BACK  # shorter: it might have fit
    model.trace("the black cat", "le chat noir", RunOptions(device="cuda", temperature=2.0))
    assert placed[7:] == ["cpu"]  # as long as the shortest failure


def test_a_new_input_moves_the_traces_still_held_off_the_gpu(monkeypatch):
    """One trace at a time on the GPU: before a run of another input that does not fit beside them, the last
    run's traces that someone still holds (the app keeps one on screen) move to the host, those nobody holds
    are only collected, and a temperature change (which reuses the run) moves nothing."""
    from attnlab.engine.trace import Trace

    moved: list[int] = []
    monkeypatch.setattr(Trace, "move_to_host", lambda self, copies=None: moved.append(id(self)))
    monkeypatch.setattr(live, "pick_device", lambda requested: GPU)
    cpu_run = LiveModel._trace_on
    monkeypatch.setattr(  # "on the GPU" here means: computed on the CPU, chosen as a GPU run is
        LiveModel, "_trace_on", lambda self, device, *a, **k: cpu_run(self, torch.device("cpu"), *a, **k)
    )
    model = make()
    first = model.trace(SRC, TGT)
    warmer = model.trace(SRC, TGT, RunOptions(temperature=2.0))  # the same tensors, another Trace
    assert moved == []
    room = {"bytes": 0}
    monkeypatch.setattr(live_placement, "available_on", lambda device: room["bytes"])  # the GPU's free memory
    room["bytes"] = 1 << 40  # both traces fit: the one on screen stays where it is
    model.trace("the dog sees the cat", TGT)
    assert moved == []
    held = model.trace("the black cat", TGT)
    room["bytes"] = 1 << 10  # the next run fits only once the traces still held are off the GPU
    model.trace("the dog sees the cat", TGT)  # another input; its trace is not kept by anyone here
    assert sorted(moved) == sorted([id(first), id(warmer), id(held)])
    moved.clear()
    model.trace("the cat", TGT)
    assert moved == []


def test_a_lean_trace_moved_to_the_host_reads_the_same():
    """Trace.move_to_host on a lean run (engine/replay.py): its layers still run again (their input and, for
    the decoder of an encoder-decoder, the encoder's output, brought back to the model) and read the same."""
    from tests.support.tiny import assert_same_trace

    whole = make().trace(SRC, TGT)
    model = make()
    model.lean_above = 0
    thin = model.trace(SRC, TGT)
    thin.move_to_host()
    assert_same_trace(whole, thin)
