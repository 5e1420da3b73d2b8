"""Long inputs on the CPU: what a recorded run of 8,192 tokens holds, its peak, and one head's map read.

    python benchmarks/long_context_bench.py                   # 8,192 tokens, rotary positions
    python benchmarks/long_context_bench.py --tokens 4096 --positional learned
    python benchmarks/long_context_bench.py --whole           # every layer's tensors kept (no recomputing)

The model (issue 23's CPU target): decoder-only, d_model 512, 8 heads, 8 layers, d_ff 2048, a word
vocabulary of about 1,000, random weights. Two traces of different random prompts go through
LiveModel.trace, the way the app runs them (the second replaces the first; nothing else holds the first).
Reported, in GiB of resident memory (/proc/self/statm after gc and malloc_trim):
  held after trace 1 / 2   RSS minus the RSS before the first trace (the model and the process excluded)
  peak                     the process's peak RSS minus the same baseline (a sampling thread, every 5 ms,
                           and getrusage's ru_maxrss at the end: the larger); peak_process: the whole
                           process's peak (torch, the model and the baseline included)
  read one head            seconds to read the last layer's head 0 attention weights (`trace.read`); a
                           lean trace (engine/replay.py, what LiveModel makes of a trace this size) runs
                           that layer again first
  read next head           seconds to read head 1 of the same site after that (the layer is kept)
  stored                   Trace.stored_bytes() of the second trace
Prints one JSON line. Run under `ulimit -v` to keep a version that needs more memory from the OOM killer.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import threading
import time

import torch
from _common import rss_bytes, trim

GIB = float(1 << 30)


class PeakSampler(threading.Thread):
    """Samples the RSS every few milliseconds until stopped; `peak` is the largest seen."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = rss_bytes()
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_bytes())
            time.sleep(0.005)


def build(tokens: int, positional: str):
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.live import LiveModel
    from attnlab.engine.model import Transformer
    from attnlab.engine.tokenizer import WordTokenizer

    words = [f"w{i}" for i in range(1000)]
    tok = WordTokenizer.train([" ".join(words)])
    cfg = ModelConfig(
        arch="decoder-only",
        src_vocab_size=tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        d_model=512,
        n_heads=8,
        n_decoder_layers=8,
        d_ff=2048,
        positional=positional,
        max_len=tokens + 16,
    )
    torch.manual_seed(0)
    return LiveModel(Transformer(cfg), tok, tok, name="long-context"), tok.vocab_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--positional", default="rotary", choices=("rotary", "learned"))
    parser.add_argument("--whole", action="store_true", help="keep every layer's tensors (no lean trace)")
    args = parser.parse_args(argv)
    from attnlab.engine.options import RunOptions

    torch.set_grad_enabled(False)
    model, vocab = build(args.tokens, args.positional)
    if args.whole:
        model.lean_above = 1 << 62
    rng = random.Random(0)
    # token ids (a text of 8,192 words is longer than the app reads): ids past the specials
    prompts = [[rng.randrange(8, vocab) for _ in range(args.tokens - 1)] for _ in range(2)]
    trim()
    base = rss_bytes()
    sampler = PeakSampler()
    sampler.start()
    held, seconds = [], []
    trace = None
    for prompt in prompts:
        start = time.perf_counter()
        trace = model.trace("", prompt, RunOptions(device="cpu"))
        seconds.append(time.perf_counter() - start)
        trim()
        held.append(rss_bytes() - base)
    assert trace is not None
    site = trace.sites()[-1]
    start = time.perf_counter()
    head = trace.read(f"{site}.weights", 0)  # [T, T]
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    trace.read(f"{site}.weights", 1)
    next_s = time.perf_counter() - start
    sampler.running = False
    sampler.join()
    peak = max(sampler.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    result = {
        "tokens": len(trace["tgt.tokens"]),
        "positional": args.positional,
        "held_gib": [round(h / GIB, 2) for h in held],
        "peak_gib": round((peak - base) / GIB, 2),
        "peak_process_gib": round(peak / GIB, 2),
        "trace_s": [round(s, 1) for s in seconds],
        "kept": trace.info.get("kept"),
        "read_one_head_s": round(read_s, 2),
        "read_next_head_s": round(next_s, 2),
        "head_shape": list(head.shape),
        "stored_gib": round(trace.stored_bytes() / GIB, 2),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
