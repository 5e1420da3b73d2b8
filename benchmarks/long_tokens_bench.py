"""Long inputs in the app's panels that list tokens (issue 23): from a trace's arrival to painted, at 8,192 tokens.

    python benchmarks/long_tokens_bench.py                       # 8,192 tokens, a 1280×900 offscreen screen
    python benchmarks/long_tokens_bench.py --tokens 2048 --screen 1024x768

The model (issue 23's CPU target, as `attnlab init --arch decoder-only --d-model 512 --heads 8 --d-ff 2048
--dec-layers 8 --positional rotary --max-len 8192` writes it): random weights and the built-in word tokenizer.
The prompt is typed text, as the app takes it: single-character tokens ('a', 'i' and punctuation, one token a
character), so 8,191 characters (under the sentence boxes' 10,000) give <s> + 8,191 = 8,192 tokens.
Two recorded traces of two texts (timed); after each, for each stage (tokens, token embedding, layer 1's
feed-forward and its first add & norm, the output) what the app does when a trace arrives: the worker's warm_up
of the stage (timed apart: it runs off the GUI thread), then the window's trace handler and the pending events,
its paint included ("to painted"); the first trace makes each panel, the next one redraws it. Then the time to
move the FFN panel's position window (its range bar's spin box), and the process's RSS. Prints a table and one
JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time

from _common import rss_bytes

os.environ.setdefault("ATTNLAB_SETTINGS", os.path.join(tempfile.mkdtemp(), "settings.ini"))

from ui_bench import offscreen_screen

GIB = float(1 << 30)


def long_text(tokens: int, seed: int = 0) -> str:
    """`tokens` - 1 single-character tokens of the built-in vocabulary: a word letter, then a punctuation mark."""
    rng = random.Random(seed)
    chars = [rng.choice("ai") if i % 2 == 0 else rng.choice(".,?!'") for i in range(tokens - 1)]
    return "".join(chars)


def build(tokens: int):
    from attnlab.checkpoints import random_model
    from attnlab.engine.config import ModelConfig

    cfg = ModelConfig(
        arch="decoder-only",
        d_model=512,
        n_heads=8,
        d_ff=2048,
        n_decoder_layers=8,
        positional="rotary",
        max_len=tokens,
    )
    return random_model(cfg, seed=0)


def stage_keys(stages: list) -> dict[str, str]:
    """The stages measured: tokens, embedding, layer 1's FFN and first add & norm, the output probabilities."""
    from attnlab.engine import names

    first = {}
    for stage in stages:
        first.setdefault(stage.kind, stage.key)
    return {
        "tokens": first["tokens"],
        "embedding": first["embed"],
        "ffn": first["ffn"],
        "add & norm": first["addnorm"],
        "output": first[names.PROBS],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--screen", default="1280x900", help="offscreen screen (and window) size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    offscreen_screen(args.screen)
    from attnlab.ui.window import app as appsettings

    app = appsettings.create_app()
    appsettings.apply_theme(False)
    import torch

    from attnlab.engine import names
    from attnlab.engine.options import RunOptions
    from attnlab.present.runtime import configure_torch
    from attnlab.present.stages import warm_up
    from attnlab.ui.window.main_window import MainWindow

    configure_torch()
    torch.set_grad_enabled(False)
    model = build(args.tokens)
    window = MainWindow()
    width, height = (int(v) for v in args.screen.split("x"))
    window.resize(width, height)
    window.show()
    app.processEvents()
    session = window.session
    session.model = model
    session.modelChanged.emit(model)
    rows: dict[str, dict[str, float]] = {}
    trace_s = []
    for run in ("first", "next"):  # the first arrival makes each panel; the next trace (another text) reuses it
        text = long_text(args.tokens, seed=len(trace_s))
        session.src = text
        start = time.perf_counter()
        trace = model.trace(text, "", RunOptions())
        trace_s.append(time.perf_counter() - start)
        for label, key in stage_keys(warm_up(trace, None)).items():
            start = time.perf_counter()
            stages = warm_up(trace, key)  # the session's worker thread, after the run
            mid = time.perf_counter()
            session.trace, session.stages, session.stage_key = trace, stages, key
            window._on_trace(trace)  # the GUI thread: the trace arrives
            app.processEvents()  # … and is painted
            row = rows.setdefault(label, {})
            row[f"warm_up_{run}_ms"] = (mid - start) * 1000
            row[f"painted_{run}_ms"] = (time.perf_counter() - mid) * 1000
    n_tokens = len(trace[names.side_entry("tgt", "tokens")])
    move_ms = move_window(app, window, session, trace, stage_keys(session.stages)["ffn"])
    result = {
        "tokens": n_tokens,
        "screen": args.screen,
        "window": f"{window.width()}x{window.height()}",
        "trace_s": [round(t, 1) for t in trace_s],
        "stages": {k: {m: round(v, 1) for m, v in row.items()} for k, row in rows.items()},
        "move_window_ms": [round(v, 1) for v in move_ms],
        "rss_gib": round(rss_bytes() / GIB, 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(f"{n_tokens} tokens, window {result['window']}, recorded traces {trace_s[0]:.1f} s / {trace_s[1]:.1f} s")
    print(f"{'stage':<12}{'warm_up (worker)':>20}{'arrival → painted':>22}   (first trace / next trace)")
    for label, row in rows.items():
        warm = f"{row['warm_up_first_ms']:.0f} / {row['warm_up_next_ms']:.0f} ms"
        painted = f"{row['painted_first_ms']:.0f} / {row['painted_next_ms']:.0f} ms"
        print(f"{label:<12}{warm:>20}{painted:>22}")
    print(f"move the FFN window (3 moves): {', '.join(f'{v:.0f} ms' for v in move_ms)}")
    print(f"RSS {result['rss_gib']} GiB; load average {result['load_average']}")
    print(json.dumps(result))
    return 0


def move_window(app, window, session, trace, key: str) -> list[float]:
    """Milliseconds to move the FFN panel's position window three times (to the middle, the end, the start),
    through its range bar's spin box, until painted."""
    session.set_stage(key)
    app.processEvents()
    panel = window.current_panel()
    windowing = getattr(panel, "windowing", None)
    if windowing is None or windowing.window is None or windowing.window.whole:
        return []
    times = []
    for start in (trace_len(trace) // 2, 10**9, 0):
        begin = time.perf_counter()
        windowing.bar.start.setValue(min(start, windowing.bar.start.maximum()))
        app.processEvents()
        times.append((time.perf_counter() - begin) * 1000)
    return times


def trace_len(trace) -> int:
    from attnlab.engine import names

    return len(trace[names.side_entry("tgt", "tokens")])


if __name__ == "__main__":
    raise SystemExit(main())
