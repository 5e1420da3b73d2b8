"""Engine forward time against torch.nn.Transformer on the same weights.

    python benchmarks/engine_bench.py            # S = T = 16, 64, 256 on a big and a small model
    python benchmarks/engine_bench.py --quick    # 64 tokens only
    python benchmarks/engine_bench.py --repeat 3 # on a shared machine: the quietest of 3 repeats per row
    python benchmarks/engine_bench.py --lengths 16,64 --repeat 5   # the issue-10 rows only

Three ways to run one encoder-decoder forward pass, all in eval mode under torch.inference_mode():
  trace on   attnlab Transformer with a recording Recorder (every intermediate kept where it was computed,
             cheap ones as derivation rules) + Recorder.entries() (no copies: a Trace reads on demand)
  trace off  attnlab Transformer with RunOptions(record=False) (the fast path)
  torch      nn.Transformer holding the same weights

Fairness: each side runs the WHOLE model: token embedding (x sqrt(d)) + sinusoidal positions, both stacks
with their final LayerNorms, and the tied output projection. The torch side does the embedding, positions,
causal-mask construction and projection with the same tensors around nn.Transformer, so the only difference
is the transformer body. Batch 1 (what the app runs). The three variants run interleaved, round-robin in a
rotating order, so a burst of load from another process hits all of them alike; each figure is the median of
--runs runs after --warmup warm-up runs.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import _common  # noqa: F401  (this checkout's attnlab first on sys.path)
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.engine.config import ModelConfig
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder

VOCAB = 1000
MODELS = {  # name: (d_model, heads, layers per stack, d_ff)
    "big": (512, 8, 6, 2048),
    "small": (128, 4, 3, 512),
}


def copy_attention(ours, theirs: nn.MultiheadAttention) -> None:
    """attnlab's separate W_Q/W_K/W_V/W_O -> nn.MultiheadAttention's packed in_proj [3d, d] and out_proj."""
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)


def copy_norm(ours, theirs: nn.LayerNorm) -> None:
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


def copy_ffn(ours, lin1: nn.Linear, lin2: nn.Linear) -> None:
    lin1.load_state_dict(ours.lin1.state_dict())
    lin2.load_state_dict(ours.lin2.state_dict())


@torch.no_grad()
def build_pair(d: int, heads: int, layers: int, d_ff: int, max_len: int):
    """An attnlab Transformer and an nn.Transformer with identical weights (post-norm, final norms on)."""
    torch.manual_seed(0)
    cfg = ModelConfig(
        src_vocab_size=VOCAB,
        tgt_vocab_size=VOCAB,
        d_model=d,
        n_heads=heads,
        d_ff=d_ff,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        final_norm=True,
        max_len=max_len,
    )
    ours = Transformer(cfg).eval()
    ref = nn.Transformer(d, heads, layers, layers, d_ff, dropout=0.0, batch_first=True).eval()
    for mine, theirs in zip(ours.encoder, ref.encoder.layers, strict=True):
        copy_attention(mine.self_attn, theirs.self_attn)
        copy_ffn(mine.ffn, theirs.linear1, theirs.linear2)
        copy_norm(mine.norm1, theirs.norm1)
        copy_norm(mine.norm2, theirs.norm2)
    for mine, theirs in zip(ours.decoder, ref.decoder.layers, strict=True):
        copy_attention(mine.self_attn, theirs.self_attn)
        copy_attention(mine.cross_attn, theirs.multihead_attn)
        copy_ffn(mine.ffn, theirs.linear1, theirs.linear2)
        for n in (1, 2, 3):
            copy_norm(getattr(mine, f"norm{n}"), getattr(theirs, f"norm{n}"))
    copy_norm(ours.enc_norm, ref.encoder.norm)
    copy_norm(ours.dec_norm, ref.decoder.norm)
    return ours, ref


def torch_forward(ours: Transformer, ref: nn.Transformer, src_ids, tgt_ids):
    """The same whole model as attnlab's, with nn.Transformer as the body.  -> logits [1, T, V]"""
    d = ours.config.d_model
    S, T = src_ids.shape[1], tgt_ids.shape[1]
    src = ours.src_embed(src_ids) * math.sqrt(d) + ours.sinusoid[:S]  # [1, S, d]
    tgt = ours.tgt_embed(tgt_ids) * math.sqrt(d) + ours.sinusoid[:T]  # [1, T, d]
    causal = nn.Transformer.generate_square_subsequent_mask(T, device=src_ids.device)  # [T, T], on the ids' device
    h = ref(src, tgt, tgt_mask=causal, tgt_is_causal=True)  # [1, T, d]
    return F.linear(h, ours.tgt_embed.weight)  # [1, T, V]


def trace_on(ours, src_ids, tgt_ids):
    rec = Recorder(True)
    logits = ours(src_ids, tgt_ids, options=RunOptions(record=True), rec=rec)
    rec.entries()
    return logits


def trace_off(ours, src_ids, tgt_ids):
    return ours(src_ids, tgt_ids, options=RunOptions(record=False), rec=Recorder(False))


def time_interleaved(fns: dict, runs: int, warmup: int) -> dict[str, float]:
    """Median milliseconds per call of each fn, the fns taking turns. The order rotates every round, so each
    fn follows each other one equally often: a run is slower right after one that left the caches and the
    allocator in another state (a recording run after a non-recording one: ~0.2 ms at d128, measured)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    for i in range(warmup + runs):
        for name in order[i % len(order) :] + order[: i % len(order)]:
            fn = fns[name]
            start = time.perf_counter()
            fn()
            elapsed = (time.perf_counter() - start) * 1000.0
            if i >= warmup:
                times[name].append(elapsed)
    return {name: statistics.median(t) for name, t in times.items()}


def bench_case(ours, ref, n: int, runs: int, warmup: int, repeat: int) -> tuple[dict[str, float], float]:
    """Median ms of each variant at S = T = n, and the largest |logit difference| trace off vs torch.

    With repeat > 1 the whole interleaved measurement is repeated and the quietest repeat (the one whose
    nn.Transformer median is lowest) is reported: its three figures were taken side by side."""
    gen = torch.Generator().manual_seed(n)
    src_ids = torch.randint(4, VOCAB, (1, n), generator=gen)  # [1, S]
    tgt_ids = torch.randint(4, VOCAB, (1, n), generator=gen)  # [1, T]
    with torch.inference_mode():
        diff = (trace_off(ours, src_ids, tgt_ids) - torch_forward(ours, ref, src_ids, tgt_ids)).abs().max()
        variants = {
            "on": lambda: trace_on(ours, src_ids, tgt_ids),
            "off": lambda: trace_off(ours, src_ids, tgt_ids),
            "torch": lambda: torch_forward(ours, ref, src_ids, tgt_ids),
        }
        repeats = [time_interleaved(variants, runs, warmup) for _ in range(repeat)]
    return min(repeats, key=lambda ms: ms["torch"]), float(diff)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only 64 tokens")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per figure (median taken)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="repeat each measurement, report the quietest repeat (for a shared machine)",
    )
    parser.add_argument("--models", default="big,small", help="comma-separated subset of: big, small")
    parser.add_argument("--lengths", default="", help="comma-separated S = T lengths (default 16,64,256)")
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: every core the machine has)"
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",")]
    unknown = [n for n in names if n not in MODELS]
    if unknown or min(args.runs, args.repeat, args.threads) < 1:
        parser.error(
            f"unknown model(s) {unknown}; choose from {list(MODELS)}"
            if unknown
            else "--runs, --repeat and --threads must be at least 1"
        )

    torch.set_num_threads(args.threads)
    lengths = (64,) if args.quick else (16, 64, 256)
    if args.lengths:
        lengths = tuple(int(n) for n in args.lengths.split(","))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch 1, median of {args.runs} "
        f"runs after {args.warmup} warm-up (quietest of {args.repeat} repeats); whole model on every "
        f"side (embeddings + body + output projection)"
    )
    header = (
        f"{'model':<28} {'S=T':>4} {'trace on ms':>12} {'trace off ms':>13} {'torch ms':>9} "
        f"{'on/torch':>9} {'off/torch':>10} {'max|Δlogit|':>12}"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        d, heads, layers, d_ff = MODELS[name]
        ours, ref = build_pair(d, heads, layers, d_ff, max_len=max(lengths))
        label = f"{name} d{d} h{heads} {layers}+{layers} ff{d_ff}"
        for n in lengths:
            ms, diff = bench_case(ours, ref, n, args.runs, args.warmup, args.repeat)
            print(
                f"{label:<28} {n:>4} {ms['on']:>12.2f} {ms['off']:>13.2f} {ms['torch']:>9.2f} "
                f"{ms['on'] / ms['torch']:>8.2f}x {ms['off'] / ms['torch']:>9.2f}x {diff:>12.1e}"
            )
    print("targets (issue 10): trace on <= 1.15x torch at 16 and 64 tokens for both models; trace off <= 1.10x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
