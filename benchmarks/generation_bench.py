"""One Generate step with the KV cache (engine/kv_cache.py) against transformers' per-token `generate` with its
own cache, on a random Llama of SmolLM2-135M's shape (hidden 576, 30 layers, 9 heads, 3 KV heads,
intermediate 1536, vocabulary 49152), the same weights in both, at a --length-token context.

    python benchmarks/generation_bench.py                 # 512 tokens, 5 timings per row (the least kept)
    python benchmarks/generation_bench.py --length 128 --runs 3 --bitwise
    python benchmarks/generation_bench.py --threads 1 --scrub   # one thread each: steadier on a shared CPU

Rows (ms, the least of --runs, on the CPU with torch's default threads):
  transformers       one token of LlamaForCausalLM with its DynamicCache at the context (a forward of the new
                     token's position, past_key_values given): what generate() spends per token
  cached step        attnlab's step with the cache, recording nothing (LiveModel.generate with record=False)
  cached step, rec   the same, recording the step's rows and cutting them to the new row (the timeline's Trace)
  whole re-trace     one run of the whole context, recording nothing: what each step cost before the cache
  scrub              (with --scrub or --scrub-only) the window's generation slider at --length tokens: a move to
                     a random step redraws the attention map's rows up to it (present/timeline.py), then the
                     KV-cache stage's cache at that step (present/views/kv_cache.py)
The ratio line divides the cached steps by transformers'. `--bitwise` also prints how far each step's rows are
from the whole-sequence run's (tests/support/kv_timeline.py) on a 2-layer model of the same width: 0 for every
entry (engine/row_stable.py).
"""

from __future__ import annotations

import argparse
import time

import torch
import transformers
from _common import sync  # noqa: F401 (the repository root on sys.path)

from attnlab.checkpoints.hf import convert
from attnlab.engine import kv_cache
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder
from attnlab.engine.trace import finish

SHAPE = dict(
    hidden_size=576,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    intermediate_size=1536,
    vocab_size=49152,
    max_position_embeddings=2048,
    tie_word_embeddings=True,
    rope_theta=100000.0,
)


def models(layers: int) -> tuple[transformers.LlamaForCausalLM, Transformer]:
    """transformers' random Llama and attnlab's, holding the same weights."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**{**SHAPE, "num_hidden_layers": layers})
    config._attn_implementation = "sdpa"
    hf = transformers.LlamaForCausalLM(config).eval()
    converted, state, _notes = convert(config.to_dict(), hf.state_dict())
    module = Transformer(converted, initialise=False)
    module.load_state_dict(state)
    return hf, module.eval()


def least_ms(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000.0


def transformers_step_ms(hf: transformers.LlamaForCausalLM, ids: torch.Tensor, runs: int) -> float:
    """One new token's forward with the cache of ids [1, T] (the cache is copied back before each)."""
    with torch.inference_mode():
        out = hf(ids, use_cache=True)
        cache = out.past_key_values
        layers = [(layer.keys.clone(), layer.values.clone()) for layer in cache.layers]

        def one() -> None:
            for layer, (k, v) in zip(cache.layers, layers, strict=True):  # back to T positions
                layer.keys, layer.values = k, v
            hf(ids[:, -1:], past_key_values=cache, use_cache=True)

        return least_ms(one, runs)


def attnlab_step_ms(module: Transformer, ids: torch.Tensor, runs: int, record: bool) -> float:
    """attnlab's cached step at position T (the prefill of ids [1, T] once, its cache restored before each)."""
    resolved = RunOptions(record=record).resolved(module.config)
    with torch.inference_mode():
        run = kv_cache.CachedRun(resolved)
        kv_cache.prefill(module, run, ids, Recorder(False), None)
        kept = {name: c.n for name, c in run.sites.items()}  # the prompt's rows (a step writes the next in place)

        def one() -> None:
            for name, n in kept.items():
                run.sites[name].n = n
            run.length = ids.shape[1]
            rec = Recorder(record)
            kv_cache.step(module, run, int(ids[0, -1]), rec)
            if record:
                kv_cache.step_rows(finish(rec, module.config, resolved, "cpu"), 1, kv_cache.BLOCK, cache=True)

        return least_ms(one, runs)


def retrace_ms(module: Transformer, ids: torch.Tensor, runs: int) -> float:
    with torch.inference_mode():
        return least_ms(lambda: module(None, ids, options=RunOptions(record=False)), runs)


def bitwise(length: int) -> None:
    from tests.support.kv_timeline import differences, timeline, whole_trace

    _hf, module = models(2)
    ids = torch.randint(0, SHAPE["vocab_size"], (1, length))
    prompt = length - 16
    worst = differences(timeline(module, None, ids, prompt), whole_trace(module, None, ids))
    equal = sorted(n for n, d in worst.items() if d == 0.0)
    print(f"\nrows of 16 steps after a {prompt}-token prompt vs the whole {length}-token run (2 layers):")
    print(f"  equal to the last bit: {len(equal)} of {len(worst)} entries")
    for name, d in worst.items():
        if d:
            print(f"  {name:24s} max |diff| {d:.3g}")


def scrub(length: int, runs: int) -> None:
    """The app's timeline slider at `length` tokens: the window (offscreen) shows a tiny decoder's attention
    weights, then the KV-cache stage; each move sets the view's position (what the slider does) and the panel
    redraws, rows 0 … t of the map (present/timeline.py) or step t's cache."""
    import os
    import random

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from attnlab.engine import names
    from attnlab.ui.window.main_window import MainWindow
    from tests.support.tiny import build_tiny_model

    app = QApplication.instance() or QApplication([])
    model = build_tiny_model("decoder-only", never_ends=True, max_len=length + 8)
    text = " ".join(("the black cat sees the small dog " * length).split()[: length - 1])  # + <s>: `length`
    window = MainWindow()
    window.resize(1280, 900)
    window.show()
    window.session.set_model(model, text, "")
    while window.session.trace is None or window.session.busy:
        app.processEvents()
    site = names.site(names.layer("dec", 1), "self")
    picks = [random.Random(k).randrange(length) for k in range(runs * 4)]
    print(f"\nscrub: the window at {len(window.session.trace['tgt.tokens'])} tokens (tiny model, offscreen)")
    for kind in ("weights", "kv_cache"):
        window.session.set_stage(names.site_entry(site, kind))
        app.processEvents()

        def move(k: int) -> None:
            window.session.set_view(upto=k)
            app.processEvents()

        moves = [least_ms(lambda k=k: move(k), 1) for k in picks]
        worst, median = max(moves), sorted(moves)[len(moves) // 2]
        print(f"  {kind:9s} a move, worst of {len(moves)} {worst:8.1f} ms   (median {median:.1f})")
    window.session.shutdown()
    window.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bitwise", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--scrub", action="store_true")
    parser.add_argument("--scrub-only", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.scrub_only:
        scrub(args.length, args.runs)
        return
    hf, module = models(SHAPE["num_hidden_layers"])
    params = sum(p.numel() for p in hf.parameters()) / 1e6
    torch.manual_seed(1)
    ids = torch.randint(0, SHAPE["vocab_size"], (1, args.length))
    print(f"random Llama, {params:.0f}M parameters, context {args.length}, {torch.get_num_threads()} threads")
    reference = transformers_step_ms(hf, ids, args.runs)
    fast = attnlab_step_ms(module, ids, args.runs, record=False)
    recorded = attnlab_step_ms(module, ids, args.runs, record=True)
    whole = retrace_ms(module, ids, max(1, args.runs // 2))
    print(f"  transformers       {reference:8.1f} ms / token")
    print(f"  cached step        {fast:8.1f} ms   ({fast / reference:.2f} x transformers)")
    print(f"  cached step, rec   {recorded:8.1f} ms   ({recorded / reference:.2f} x transformers)")
    print(f"  whole re-trace     {whole:8.1f} ms   (the step before the cache, recording nothing)")
    if args.bitwise:
        bitwise(min(args.length, 64))
    if args.scrub:
        scrub(args.length, args.runs)


if __name__ == "__main__":
    main()
