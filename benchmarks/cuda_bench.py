"""The recorded forward on a CUDA GPU: trace on ÷ trace off, and how soon the first panel's data is on the host.

    python benchmarks/cuda_bench.py                  # d512 8 heads 6+6 at 64, 256, 1024 tokens + GPT-2 shape
    python benchmarks/cuda_bench.py --lengths 64,256 --runs 20

Needs a CUDA GPU: without one it prints why and exits with status 1, measuring nothing (`--device cpu` runs
the same code on the CPU as a smoke test). Random weights, batch 1, eval mode, fp32.
Rows for the d512 8-head 6+6 encoder-decoder (S = T = n):
  trace off     forward with RunOptions(record=False) (fused attention), synchronised
  trace on      forward with a recording Recorder and trace.finish(rec, …), synchronised: the trace stays on
                the GPU, nothing is copied
  torch         nn.Transformer holding the same weights (the engine_bench.py pairing)
  first panel   after the recorded forward has ended: the last cross-attention site's panel data as the
                app's worker fetches it (warm_up: every head's weights, derived on read) and the last
                position's logits on the host
  all to host   Trace.to("cpu"): every entry, derived ones included, on the host (what the old finish() did)
Then, for a GPT-2-small-shaped decoder-only model (d768, 12 layers, 12 heads, vocab 50257) at 1024 tokens:
  toggle → data a temperature change (LiveModel.trace, reused entries) and the output panel's data on the
                host; and a head change: another head of the last site read to the host.
Targets (issue 10): trace on / trace off <= 1.5x at every length; first panel <= 20 ms; toggle -> visible
panel repainted <= 100 ms (this script times the data part; painting is ui_bench.py's).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from _common import median_ms, sync
from engine_bench import VOCAB, build_pair, torch_forward

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.engine.trace import Recorder, finish
from attnlab.present.stages import warm_up

DEVICE = "cuda"


def cuda_ms(fn, runs: int, warmup: int = 3) -> float:
    """Median wall milliseconds of fn() followed by a device synchronisation."""
    return median_ms(fn, runs, warmup, DEVICE)


def recorded(model, src, tgt):
    """A recorded run of ids src [1, S], tgt [1, T], with token lists (the app's stage list reads them)."""
    rec = Recorder(True)
    rec.tokens("src.tokens", [f"s{i}" for i in range(src.shape[1])])
    rec.tokens("tgt.tokens", [f"t{i}" for i in range(tgt.shape[1])])
    options = RunOptions(record=True).resolved(model.config)
    model(src, tgt, options=options, rec=rec)
    return finish(rec, model.config, options, str(src.device))


def first_panel_ms(model, src, tgt, runs: int) -> float:
    """From the end of the recorded forward to the data of the last cross-attention site's panel on the host,
    as the app's worker brings it (present.stages.warm_up: every head's weights, derived on read, whole), and
    the last output row."""
    times = []
    for _ in range(runs):
        trace = recorded(model, src, tgt)
        stage = f"{trace.sites()[-1]}.weights"
        sync(DEVICE)  # the forward has ended
        start = time.perf_counter()
        warm_up(trace, stage)
        trace.read("logits", -1)
        times.append((time.perf_counter() - start) * 1000.0)
        assert f"{trace.sites()[-1]}.weights" in trace._host, "warm_up did not bring the panel's data"
    return statistics.median(times)


def all_to_host_ms(model, src, tgt, runs: int) -> float:
    """Trace.to("cpu") of a fresh trace (a read trace answers from its host cache)."""
    times = []
    for _ in range(runs):
        trace = recorded(model, src, tgt)
        sync(DEVICE)
        start = time.perf_counter()
        trace.to("cpu")
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def encoder_decoder_rows(lengths: list[int], runs: int) -> None:
    ours, ref = build_pair(512, 8, 6, 2048, max_len=max(lengths))
    ours, ref = ours.to(DEVICE), ref.to(DEVICE)
    print(
        f"{'d512 h8 6+6, n':<16} {'off ms':>8} {'on ms':>8} {'torch ms':>9} {'on/off':>7} {'first panel ms':>15} "
        f"{'all to host ms':>15}"
    )
    with torch.inference_mode():
        for n in lengths:
            src = torch.randint(4, VOCAB, (1, n), device=DEVICE)  # [1, S]
            tgt = torch.randint(4, VOCAB, (1, n), device=DEVICE)  # [1, T]
            off = cuda_ms(lambda s=src, t=tgt: ours(s, t, options=RunOptions(record=False)), runs)
            on = cuda_ms(lambda s=src, t=tgt: recorded(ours, s, t), runs)
            theirs = cuda_ms(lambda s=src, t=tgt: torch_forward(ours, ref, s, t), runs)
            first = first_panel_ms(ours, src, tgt, runs)
            everything = all_to_host_ms(ours, src, tgt, max(3, runs // 4))
            print(f"{n:<16} {off:>8.2f} {on:>8.2f} {theirs:>9.2f} {on / off:>6.2f}x {first:>15.2f} {everything:>15.1f}")


def gpt2_rows(tokens: int, runs: int) -> None:
    words = [f"w{i}" for i in range(2000)]
    tok = WordTokenizer.train([" ".join(words)])
    torch.manual_seed(0)
    cfg = ModelConfig(
        arch="decoder-only",
        tgt_vocab_size=50257,
        d_model=768,
        n_heads=12,
        d_ff=3072,
        n_decoder_layers=12,
        activation="gelu",
        norm_first=True,
        final_norm=True,
        positional="learned",
        scale_embedding=False,
        max_len=tokens + 8,
    )
    model = LiveModel(Transformer(cfg), tok, tok)
    prompt = " ".join(words[i % 2000] for i in range(tokens - 1))
    fresh = iter(f"{prompt} w{i}" for i in range(10_000))  # a new text each time: no reuse
    full = cuda_ms(lambda: model.trace(next(fresh), options=RunOptions(device=DEVICE)), max(3, runs // 4))
    base = model.trace(prompt, options=RunOptions(device=DEVICE))
    site = base.sites()[-1]
    base.read(f"{site}.weights", 0)
    temps = iter(1.0 + 0.01 * i for i in range(1, 10_000))

    def temperature():
        t = model.trace(prompt, options=RunOptions(device=DEVICE, temperature=next(temps)))
        t.read("probs", -1)

    heads = iter(i % 12 for i in range(1, 10_000))
    print(
        f"GPT-2-small shape, {tokens} tokens: full recorded run {full:.1f} ms; temperature toggle -> output data "
        f"{cuda_ms(temperature, runs):.2f} ms; head change -> heatmap data "
        f"{cuda_ms(lambda: base.read(f'{site}.weights', next(heads)), runs):.2f} ms"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", default="64,256,1024")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--gpt2-tokens", type=int, default=1024)
    parser.add_argument(
        "--device",
        default="cuda",
        choices=("cuda", "cpu"),
        help="cpu: a smoke run of the same code (its figures mean nothing for the targets)",
    )
    args = parser.parse_args(argv)
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print(
            "cuda_bench.py measures a CUDA GPU and none is available here "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'}); nothing was measured. "
            "`--device cpu` runs the same code as a smoke test.",
            file=sys.stderr,
        )
        return 1
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU (smoke run)"
    print(f"torch {torch.__version__}, {name}, batch 1, fp32, median of {args.runs}")
    encoder_decoder_rows([int(n) for n in args.lengths.split(",")], args.runs)
    gpt2_rows(args.gpt2_tokens, args.runs)
    print("targets: on/off <= 1.5x; first panel <= 20 ms; toggle -> repainted panel <= 100 ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
