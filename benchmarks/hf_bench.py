"""A GPT-2-small-shaped model opened through attnlab's Hugging Face import, against transformers' own forward.

    python benchmarks/hf_bench.py                 # 128 and 512 tokens, quietest of 3 repeats per row
    python benchmarks/hf_bench.py --repeat 5 --runs 7 --threads 2

The model: GPT2Config (d 768, 12 layers, 12 heads, vocab 50257, 1024 positions) with random weights, built
from the config (nothing is downloaded) and converted with attnlab.checkpoints.hf.convert. One batch-1
forward pass on the CPU, both under torch.inference_mode():
  attnlab trace   attnlab Transformer with a recording Recorder (every intermediate kept) + Recorder.entries()
  attnlab fast    the same with RunOptions(record=False)
  transformers    GPT2LMHeadModel(attn_implementation="eager") with output_attentions=True
The three run interleaved, round-robin, so a burst of load from another process hits all of them alike; each
figure is the median of --runs runs after a warm-up, and each row reports the repeat with the lowest
transformers time (the quietest). ratio = attnlab trace / transformers (target <= 1.0).
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch
from _common import timed_ms

from attnlab.checkpoints.hf import convert
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder


def build(n_positions: int):
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_positions=n_positions)  # GPT-2 small: 768 / 12 / 12 / 50257
    config._attn_implementation = "eager"
    theirs = transformers.GPT2LMHeadModel(config).eval()
    attnlab_config, state, _notes = convert(config.to_dict(), theirs.state_dict())
    ours = Transformer(attnlab_config)
    ours.load_state_dict(state)
    return ours.eval(), theirs


def measure(ours, theirs, n_tokens: int, runs: int) -> dict[str, float]:
    ids = torch.randint(0, 50257, (1, n_tokens))
    fast = RunOptions(record=False)

    def trace():
        rec = Recorder(True)
        ours(None, ids, rec=rec)
        rec.entries()

    variants = {
        "attnlab trace": trace,
        "attnlab fast": lambda: ours(None, ids, options=fast),
        "transformers": lambda: theirs(ids, output_attentions=True),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    with torch.inference_mode():
        for fn in variants.values():
            fn()  # warm-up
        for _ in range(runs):
            for name, fn in variants.items():
                times[name].append(timed_ms(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    ours, theirs = build(max(1024, max(args.tokens)))
    print(
        f"GPT-2 small shape, random weights; CPU, {torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'tokens':>6} | {'attnlab trace ms':>16} | {'attnlab fast ms':>15} | {'transformers ms':>15} | "
        f"{'trace / transformers':>20}"
    )
    for n in args.tokens:
        best = min((measure(ours, theirs, n, args.runs) for _ in range(args.repeat)), key=lambda r: r["transformers"])
        ratio = best["attnlab trace"] / best["transformers"]
        print(
            f"{n:>6} | {best['attnlab trace']:>16.1f} | {best['attnlab fast']:>15.1f} | "
            f"{best['transformers']:>15.1f} | {ratio:>20.2f}"
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
