"""Sample the next token 20 times from one run (issue 35): the cost against the one trace it reads.

Target: 20 samples of a 135M model's next token in at most 2× one trace. "Sample 20 times" draws from the
logits one run already holds (present/views/output_sampling.py: the top-k / top-p cut, then 20 draws with seeds
seed … seed + 19), so no forward pass is repeated. The model: a random Llama of SmolLM2-135M's shape (hidden 576,
30 layers, 9 heads, 3 K/V heads, intermediate 1536, vocabulary 49,152), written as a Hugging Face folder by
trace_out_bench.write_folder and opened by attnlab.load.

    python benchmarks/sampling_bench.py [--runs 5] [--words 16] [--device cpu]

Torch gets the app's thread count (present/runtime.configure_torch). Prints the median milliseconds of one
recorded trace, of the same trace followed by the output stage's sampling view (the cut and the 20 draws), of
the 20 draws alone, and the ratio (target ≤ 2).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from _common import timed_ms
from trace_out_bench import write_folder

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--words", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import attnlab
    from attnlab.engine import names, sampling
    from attnlab.engine.options import RunOptions
    from attnlab.present.runtime import configure_torch
    from attnlab.present.views.output_sampling import sampling_cut

    threads = configure_torch()  # as the app's worker does (one core fewer than the machine has)

    options = RunOptions(sample=True, top_k=50, top_p=0.9, temperature=0.8, seed=0, device=args.device)
    settings = sampling.SamplingSettings.of(options)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-135m"
        print(f"a random SmolLM2-135M-shaped Llama: {write_folder(folder):,} parameters")
        model = attnlab.load(folder, device=args.device)

        def prompt(i: int) -> str:  # a new text each run, so the run cache reuses nothing
            return " ".join(f"w{100 + (i * 37 + j * 11) % 40000}" for j in range(args.words))

        def trace(i: int) -> Trace:
            return model.trace(prompt(i), options=options)

        def with_samples(i: int) -> None:
            run = trace(i)
            ids = sampling.kept_probs(run.read(names.LOGITS, -1), settings).argsort(descending=True)[:10].numpy()
            sampling_cut(run, -1, ids, str)  # what the output stage computes: the cut and the 20 draws

        trace(-1)  # warm-up
        one = [timed_ms(lambda i=i: trace(i), args.device) for i in range(args.runs)]
        both = [timed_ms(lambda i=i: with_samples(1000 + i), args.device) for i in range(args.runs)]
        logits = trace(5000).read(names.LOGITS, -1)  # [V]
        draws = [
            timed_ms(lambda: sampling.sample_counts(sampling.kept_probs(logits, settings), 0, 20))
            for _ in range(args.runs)
        ]
    t1, t2, t3 = statistics.median(one), statistics.median(both), statistics.median(draws)
    print(f"{args.words} tokens, {args.device}, {threads} torch thread(s), median of {args.runs} runs")
    print(f"one recorded trace:                      {t1:9.1f} ms")
    print(f"trace + the sampling view (20 draws):    {t2:9.1f} ms")
    print(f"the cut and 20 draws alone:              {t3:9.2f} ms")
    print(f"ratio (trace + 20 samples) / one trace:  {t2 / t1:9.3f}   (target <= 2)")


if __name__ == "__main__":
    main()
