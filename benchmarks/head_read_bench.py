"""Clicking a head after a run: how long its map takes to read, and every map back against TransformerLens.

    PYTHONPATH=/path/to/transformer_lens python benchmarks/head_read_bench.py [--tokens 512] [--rounds 6]
    python benchmarks/head_read_bench.py --keep outputs     # a lean trace of layer outputs only, for comparison

The GPT-2-small shape of benchmarks/memory_bench.py (d768, 12 layers, 12 heads, vocabulary 50257, random
weights), traced as the app traces it (`LiveModel.trace`: a trace of this size is lean, engine/replay.py).
Every call gets an input it has not seen (attnlab returns its last run for a repeated input), and the two
sides take turns (round robin), so both see the same load on a shared machine. Rows:

  first head of a layer   after a trace, `trace.read("dec.L.self.weights", 0)` for each layer L in turn: the
                          first head a person clicks in a layer (target <= 100 ms); the median and the
                          largest over layers and rounds, the median CPU time of the process (all its
                          threads: less sensitive to a busy machine), and the layers run again meanwhile (0
                          when the trace kept each site's Q, K, V and mask)
  all maps back           attnlab: trace + every layer's [H, T, T] weights on the host (and the maps alone,
                          read after the trace); TransformerLens: `run_with_cache` (which computes and keeps
                          every pattern); the median of each and the ratio of the medians (target <= 1.1)
  tensor bytes            what the lean trace stores against TransformerLens's cache plus logits (the
                          README's memory figure; target <= 0.25; benchmarks/memory_bench.py measures RSS too)

Without TransformerLens importable only attnlab's rows are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from _common import trim
from memory_bench import LAYERS, VOCAB, gpt2_small_live, gpt2_small_tl, unique_bytes


def weights_names() -> list[str]:
    from attnlab.engine import names

    return [names.site_entry(names.site(names.layer("dec", i), "self"), "weights") for i in range(LAYERS)]


def replays(trace) -> int:
    """Layers run again so far by this trace's LayerReplay (0 when it has none)."""
    from attnlab.engine import replay

    found = {id(e.params[0]): e.params[0] for e in trace.entries.values() if getattr(e, "rule", None) == replay.RULE}
    return sum(r.replays for r in found.values())


def first_heads(model, ids: list[int]) -> tuple[list[float], list[float], int, str]:
    """(wall ms and CPU ms of this process for the first head of each layer, layers run again, what the trace
    kept) after one trace."""
    trace = model.trace(tgt=ids)
    wall, cpu = [], []
    for name in weights_names():
        start, start_cpu = time.perf_counter(), time.process_time()
        trace.read(name, 0)  # [T, T]
        wall.append((time.perf_counter() - start) * 1000.0)
        cpu.append((time.process_time() - start_cpu) * 1000.0)
    return wall, cpu, replays(trace), str(trace.info.get("kept", "whole"))


def attnlab_all_maps(model, ids: list[int]) -> tuple[float, float]:
    """(ms for the trace and every map on the host, ms for the maps alone after the trace)."""
    start = time.perf_counter()
    trace = model.trace(tgt=ids)
    traced = time.perf_counter()
    maps = trace.fetch(weights_names())  # each [H, T, T]
    assert len(maps) == LAYERS
    end = time.perf_counter()
    return (end - start) * 1000.0, (end - traced) * 1000.0


def tl_all_maps(model, ids: list[int]) -> float:
    start = time.perf_counter()
    with torch.inference_mode():
        _logits, cache = model.run_with_cache(torch.tensor([ids]))  # [1, T]
    assert cache["pattern", LAYERS - 1].shape[-1] == len(ids)
    return (time.perf_counter() - start) * 1000.0


def spread(times: list[float]) -> str:
    return f"median {statistics.median(times):.0f} ms, range {min(times):.0f}-{max(times):.0f}"


def head_rows(ours, inputs, rounds: int) -> None:
    wall, cpu, replayed, kept = [], [], 0, ""
    for _ in range(rounds):
        w, c, n, kept = first_heads(ours, next(inputs))
        wall, cpu, replayed = wall + w, cpu + c, replayed + n
    print(
        f"first head of a layer (kept: {kept}): median {statistics.median(wall):.1f} ms, largest {max(wall):.1f} ms "
        f"over {len(wall)} reads (CPU time median {statistics.median(cpu):.1f} ms); layers run again: {replayed}   "
        "(target <= 100 ms)"
    )


def all_maps_rows(ours, theirs, inputs, rounds: int) -> None:
    both, reads, tl = [], [], []
    for i in range(rounds):
        for side in ("attnlab", "tl") if i % 2 == 0 else ("tl", "attnlab"):  # alternate which goes first
            trim()
            if side == "attnlab":
                total, read = attnlab_all_maps(ours, next(inputs))
                both.append(total)
                reads.append(read)
            elif theirs is not None:
                tl.append(tl_all_maps(theirs, next(inputs)))
    print(f"all maps back, attnlab trace + every map:   {spread(both)}")
    print(f"  of which reading the maps after the trace: {spread(reads)}")
    if tl:
        print(f"TransformerLens run_with_cache:             {spread(tl)}")
        for label, ours_ms in (("trace + maps", both), ("maps after the trace", reads)):
            ratios = [a / t for a, t in zip(ours_ms, tl, strict=True)]
            print(
                f"attnlab {label} / TransformerLens: {statistics.median(ours_ms) / statistics.median(tl):.2f}x "
                f"(per round {min(ratios):.2f}-{max(ratios):.2f})   (target <= 1.1)"
            )


def bytes_row(ours, theirs, inputs) -> None:
    trace = ours.trace(tgt=next(inputs))
    mib = 2**20
    line = f"tensor bytes: lean trace ({trace.info.get('kept', 'whole')}) {trace.stored_bytes() / mib:.1f} MiB"
    if theirs is not None:
        with torch.inference_mode():
            logits, cache = theirs.run_with_cache(torch.tensor([next(inputs)]))  # [1, T]
        tl_bytes = unique_bytes([logits, *cache.values()])
        line += f", TransformerLens {tl_bytes / mib:.1f} MiB: {trace.stored_bytes() / tl_bytes:.2f}x (target <= 0.25)"
    print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--keep",
        choices=("outputs", "attention", "whole"),
        help="force what the trace keeps (engine/replay.py) instead of LiveModel's choice: 'outputs' is what a "
        "lean CPU run below 1,024 tokens kept before issue 32 (and a GPU run keeps)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ours = gpt2_small_live()
    if args.keep == "whole":
        ours.lean_above = 1 << 62
    elif args.keep:
        ours._keep = lambda _device, _options, _sides: args.keep
    try:
        theirs = gpt2_small_tl()
    except ImportError as e:
        print(f"TransformerLens not importable ({e}): attnlab's rows only")
        theirs = None
    gen = torch.Generator().manual_seed(1)
    inputs = iter(lambda: torch.randint(4, VOCAB, (args.tokens,), generator=gen).tolist(), None)
    print(
        f"GPT-2-small shape, {args.tokens} tokens, {args.threads} threads, torch {torch.__version__}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    attnlab_all_maps(ours, next(inputs))  # warm both: first-run allocations and kernel choices
    if theirs is not None:
        tl_all_maps(theirs, next(inputs))
    head_rows(ours, inputs, args.rounds)
    all_maps_rows(ours, theirs, inputs, args.rounds)
    bytes_row(ours, theirs, inputs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
