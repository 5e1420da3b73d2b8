"""The code issue 33's seams moved, timed: LiveModel.trace (a new text, a temperature change, a mask change
that resumes at a layer), a run plus what the session adds to it afterwards (Trace.with_info), and
HeadGrid.set_heads with new data (8 heads, 12 × 12).

    PYTHONPATH=. python benchmarks/seams_bench.py            # 25 timings per row
    PYTHONPATH=. python benchmarks/seams_bench.py --runs 50
    PYTHONPATH=/path/to/other/tree python benchmarks/seams_bench.py   # the same rows on another version

The bundled translation model (a random stand-in while the trained file is absent), one torch thread, on the
CPU, offscreen. Each figure is the MINIMUM of --runs timings in ms: on a shared machine the other processes
inflate a median far more than the least time, and the point is to compare two versions of the code run one
after the other (the figures of one run are not a target).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import torch

from attnlab.checkpoints import load_bundled
from attnlab.engine.options import RunOptions

SRC, TGT = "the black cat sees the small dog", "le chat"


def least_ms(fn: Callable[[int], object], runs: int) -> float:
    """The least time of `runs` calls fn(0), fn(1), … in milliseconds."""
    times = []
    for i in range(runs):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def added(trace: Any) -> Any:
    """`trace` with the session's job time: a new Trace (before issue 33 the session wrote into trace.info,
    which this does on such a tree, so that the two can be compared)."""
    if hasattr(trace, "with_info"):
        return trace.with_info(job_ms=1.0)
    trace.info["job_ms"] = 1.0
    return trace


def live_rows(runs: int) -> dict[str, float]:
    model = load_bundled("translation")
    words = SRC.split()
    rows = {"trace, new text": least_ms(lambda i: model.trace(" ".join(words[i % 7 :] + words[: i % 7]), TGT), runs)}
    model.trace(SRC, TGT)

    def warmer(i: int) -> Any:
        return model.trace(SRC, TGT, RunOptions(temperature=1.0 + (i % 5) / 10))

    rows["trace, temperature (reused)"] = least_ms(warmer, runs)
    rows["  + what the session adds (with_info)"] = least_ms(lambda i: added(warmer(i)), runs)
    masked = RunOptions()
    rows["trace, mask (resumed at a layer)"] = least_ms(
        lambda i: model.trace(SRC, TGT, masked.toggled_mask_cell("dec.1.self", 1 + i % 3, 0)), runs
    )
    return rows


def grid_rows(runs: int) -> dict[str, float]:
    from PySide6.QtWidgets import QApplication

    from attnlab.ui.plots.head_grid import HeadGrid

    app = QApplication.instance() or QApplication([])
    grid = HeadGrid()
    grid.resize(900, 600)
    grid.show()
    rng = np.random.default_rng(0)
    maps = [rng.random((8, 12, 12)).astype(np.float32) for _ in range(4)]  # [H, Tq, Tk]
    labels = [f"t{i}" for i in range(12)]
    grid.set_heads(maps[0], labels, labels)
    app.processEvents()
    return {"HeadGrid.set_heads (new data)": least_ms(lambda i: grid.set_heads(maps[i % 4], labels, labels), runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=25, help="timings per row (the least is shown)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = {**live_rows(args.runs), **grid_rows(args.runs * 4)}
    import attnlab

    where = os.path.dirname(os.path.dirname(attnlab.__file__))
    print(f"attnlab from {where}; torch {torch.__version__}, 1 thread; least of {args.runs} runs (set_heads: ×4), ms")
    for name, ms in rows.items():
        print(f"{name:40s} {ms:8.3f}")


if __name__ == "__main__":
    main()
