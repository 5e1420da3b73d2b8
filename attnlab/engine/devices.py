"""Which device a run takes, and giving GPU memory back: after an out-of-memory error, and before a run of
another input that does not fit beside the traces still held (issue 23: one trace at a time). Qt-free."""

from __future__ import annotations

import gc
import threading
import weakref

import torch


def pick_device(requested: str) -> torch.device:
    """The device a run with RunOptions.device `requested` uses, with its index ("cuda:0", never a bare
    "cuda": the parameters' device has one, and the two must compare equal)."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("CUDA was requested but no CUDA GPU is available; choose 'cpu' or 'auto'")
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def out_of_device_memory(error: BaseException) -> bool:
    """Whether `error` says the GPU (or the pinned host memory a GPU run copies into) ran out of memory."""
    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def free_device_memory_of(dropped: list[weakref.ref]) -> None:
    """Give back the GPU memory of runs this model no longer keeps: a trace someone still holds (the app keeps
    the last one on screen while the next computes) moves to the host (Trace.move_to_host); the rest is
    collected (release_device_memory); then the caching allocator returns the blocks, so the next run's budget
    counts them as free."""
    copies: dict[tuple, torch.Tensor] = {}  # one host copy of a tensor several of these traces share
    for ref in dropped:
        trace = ref()
        if trace is not None:
            trace.move_to_host(copies)
        del trace
    del copies
    release_device_memory()


def collect_garbage() -> None:
    """gc.collect() where it is safe: on the main thread (the CLI, the API); a no-op on a worker thread."""
    if threading.current_thread() is threading.main_thread():
        gc.collect()


def release_device_memory() -> None:
    """Give the memory of a failed GPU run back: the tensors it left behind are collected first, then the
    caching allocator returns its unused blocks (for the CPU run that follows, and for other programs).

    The collection runs on the main thread only: on the app's worker thread it can finalise Qt objects caught in
    the same cycles, which Qt allows only on their own thread (a CI run segfaulted there); Python's own
    collections free them later, and the memory check that follows counts what is free now."""
    collect_garbage()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
