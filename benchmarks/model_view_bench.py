"""Whole-model attention view: time to first paint and repaint on a head-count toggle, for a random
12-layer × 12-head, d_model 768 decoder-only model at 128 tokens (144 heads of 128 × 128 on one screen).

    python benchmarks/model_view_bench.py                 # 12 × 12, d768, 128 tokens, 10 repaints
    python benchmarks/model_view_bench.py --layers 6 --tokens 64 --repeats 20

  first paint  ModelView made, given the trace (one read of every site's weights, tiled) and painted
               synchronously into a 1400 × 900 window.
  toggle       the trace of the same input re-split into 8 heads (12 ↔ 8 alternately): set_trace + repaint.
The model's compute time is printed separately (it runs on the worker thread in the app). Offscreen unless
QT_QPA_PLATFORM says otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def build(layers: int, heads: int, d_model: int, tokens: int):
    from attnlab.checkpoints import random_model
    from attnlab.engine.config import ModelConfig

    config = ModelConfig(
        arch="decoder-only",
        src_vocab_size=1000,
        tgt_vocab_size=1000,
        d_model=d_model,
        n_heads=heads,
        d_ff=4 * d_model,
        n_encoder_layers=0,
        n_decoder_layers=layers,
        max_len=max(tokens + 8, 128),
    )
    return random_model(config, seed=0)


def paint_ms(app, widget, action) -> float:
    start = time.perf_counter()
    action()
    widget.repaint()
    app.processEvents()
    return (time.perf_counter() - start) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--shot", metavar="PNG", help="also save a picture of the view")
    args = parser.parse_args()

    from attnlab.engine.options import RunOptions
    from attnlab.ui.plots.model_view import ModelView
    from attnlab.ui.window import app as appsettings

    app = appsettings.create_app(["model-view-bench"])
    appsettings.plot_colours()
    model = build(args.layers, args.heads, args.d_model, args.tokens)
    extra = model.trace(None, [5]).get("tgt.tokens", [None])  # the start token(s) the model adds
    ids = list(range(5, 5 + args.tokens - (len(extra) - 1)))  # [T] token ids: T positions in all
    start = time.perf_counter()
    traces = [model.trace(None, ids), model.trace(None, ids, RunOptions(n_heads=8))]
    compute_ms = (time.perf_counter() - start) * 1000.0 / 2
    tq = traces[0]["dec.0.self.weights"].shape
    print(
        f"model: decoder-only, {args.layers} layers × {args.heads} heads, d_model {args.d_model}; "
        f"weights per site {list(tq)}; compute per trace {compute_ms:.0f} ms"
    )

    start = time.perf_counter()
    view = ModelView()
    view.resize(1400, 900)
    view.show()
    view.set_trace(traces[0])
    view.repaint()
    app.processEvents()
    first = (time.perf_counter() - start) * 1000.0
    toggles = [paint_ms(app, view, lambda t=traces[(i + 1) % 2]: view.set_trace(t)) for i in range(args.repeats)]
    same = [paint_ms(app, view, lambda: view.set_trace(traces[0])) for _ in range(args.repeats)]
    print(f"first paint            {first:7.1f} ms")
    print(
        f"head-count toggle      median {statistics.median(toggles):7.1f} ms   max {max(toggles):7.1f} ms "
        f"({args.repeats} repaints, {args.heads} ↔ 8 heads)"
    )
    if args.shot:
        view.grab().save(args.shot)
    print(f"same shape, new trace  median {statistics.median(same):7.1f} ms   max {max(same):7.1f} ms")


if __name__ == "__main__":
    main()
