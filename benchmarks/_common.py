"""What the benchmarks share (issue 33): the repository root on sys.path, so a benchmark run as
`python benchmarks/NAME.py` imports this checkout's attnlab and the test helpers (`tests.support`); wall-clock
timing with the device synchronised around the timed call; percentiles; the process's resident memory.
Import it before attnlab: `from _common import ROOT, median_ms` (benchmarks/ is sys.path[0] when a script
runs). Torch is imported only to synchronise a CUDA device, so a torch-free benchmark stays torch-free."""

from __future__ import annotations

import ctypes
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

T = TypeVar("T")


def sync(device: str = "cpu") -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def timed(fn: Callable[[], T], device: str = "cpu") -> tuple[T, float]:
    """fn()'s value and its wall seconds, the device synchronised before and after."""
    sync(device)
    start = time.perf_counter()
    value = fn()
    sync(device)
    return value, time.perf_counter() - start


def timed_ms(fn: Callable[[], object], device: str = "cpu") -> float:
    """fn()'s wall milliseconds, the device synchronised before and after."""
    return timed(fn, device)[1] * 1000.0


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 0, device: str = "cpu") -> float:
    """The median of `runs` timings of fn() in milliseconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    return statistics.median(timed_ms(fn, device) for _ in range(runs))


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values`: the nearest rank, no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def rss_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def trim() -> None:
    """Collect garbage and hand freed heap back to the system, so the next RSS reading is not yesterday's."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
