"""What head ablation costs in the app: a recorded run of the bundled translation model alone, and an ablated
recorded run plus the un-ablated fast run the output stage compares it with (present/ablation.baseline_probs).

    python benchmarks/ablation_bench.py [--threads N] [--runs N]

Options alternate between two values, so the model's temperature-only reuse never applies. Prints medians.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import _common  # noqa: F401  (this checkout's attnlab first on sys.path)
import torch

from attnlab.checkpoints.bundled import load_bundled
from attnlab.engine.options import RunOptions
from attnlab.present.ablation import baseline_probs

SRC, TGT = "the black cat sees the small dog", "le chat noir"


def median_ms(model, options: list[RunOptions], with_baseline: bool, runs: int) -> float:
    cycle, times = itertools.cycle(options), []
    for i in range(runs + 4):  # 4 warm-up runs
        opts = next(cycle)
        start = time.perf_counter()
        if with_baseline:
            baseline_probs(model, SRC, TGT, opts)
        model.trace(SRC, TGT, opts)
        if i >= 4:
            times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_bundled("translation")
    plain = [RunOptions(), RunOptions(scale=False)]
    ablated = [RunOptions(ablate=(("dec.1.cross", 1, "zero"),)), RunOptions(ablate=(("dec.1.cross", 2, "mean"),))]
    print(f"recorded run: {median_ms(model, plain, False, args.runs):.1f} ms")
    print(f"ablated recorded run + un-ablated baseline: {median_ms(model, ablated, True, args.runs):.1f} ms")


if __name__ == "__main__":
    main()
