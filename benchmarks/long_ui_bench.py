"""Long inputs in the app: an 8,192-token run shown as the weights map, the heads grid and the model view.

    python benchmarks/long_ui_bench.py                          # 8,192 tokens, offscreen
    python benchmarks/long_ui_bench.py --tokens 4096 --shots docs/long-inputs

The model (issue 23's CPU target): `attnlab init --arch decoder-only --d-model 512 --heads 8 --d-ff 2048
--dec-layers 8 --positional rotary --max-len 8192` (random weights, its word tokenizer). The input is what a
person can type: a sentence of one-letter words and punctuation without spaces ("i.a,i!a?…"), which that
tokenizer splits into one token per character, so 8,191 characters are 8,191 tokens plus <s>. A MainWindow
(1280 × 900, offscreen) runs it on its worker thread; then, on the GUI thread, each step is timed from the
call to the window painted (`repaint()` and the events it queued):
  trace           set_model → traceReady (the worker's run and warm-up) and the Q, K, V stage painted
  weights         the weights stage of layer 0 (head 1) painted: blank tiles (the blocked ones hatched) first
  weights filled  then (from there) its overview, the map read once off the GUI thread, painted
  heads           the all-heads stage of layer 0 painted (the heads read before drawn, the others blank)
  heads filled    then (from there) every head's overview tiles read off the GUI thread and painted
  model view      View → Whole-model attention: 8 layers × 8 heads, blank thumbnails painted
  model view filled  from the dock shown to every thumbnail painted (read off the GUI thread, one head after
                  another), with the longest the GUI thread went without answering meanwhile
  zoom 64 × 64    the weights map zoomed to a 64 × 64 window: the exact cells fetched and painted
  hover           the readout of one cell under the mouse (its exact value read from the engine)
  mask click      a click on a mask cell at that zoom: the (query, key) it names
RSS: the process's resident memory (/proc/self/statm), after each step ("held") and its peak (a thread samples
every 5 ms; getrusage's ru_maxrss at the end), in MiB. Prints one line per step and one JSON line.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIB = float(1 << 20)


sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rss_bytes  # noqa: E402
from long_context_bench import PeakSampler  # noqa: E402


def checkpoint(path: Path, tokens: int) -> Path:
    """The issue's model, written by `attnlab init` (once)."""
    if not path.exists():
        command = [sys.executable, "-c", "from attnlab.cli import main; main()", "init", "--arch", "decoder-only"]
        command += ["--d-model", "512", "--heads", "8", "--d-ff", "2048", "--dec-layers", "8"]
        command += ["--positional", "rotary", "--max-len", str(max(tokens, 8192)), "--out", str(path)]
        subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    return path


def long_text(tokens: int) -> str:
    """tokens − 1 characters, each one token of the word tokenizer (its <s> makes `tokens`)."""
    pattern = "i.a,i!a?"
    return (pattern * (tokens // len(pattern) + 1))[: tokens - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--checkpoint", type=Path, help="the model (default: made with attnlab init in a temp dir)")
    parser.add_argument("--shots", type=Path, help="save PNGs of the overview, the zoom, the heads and model view")
    args = parser.parse_args(argv)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # kill -USR1 <pid>: where it is now

    import torch

    from attnlab.checkpoints.loader import load_checkpoint
    from attnlab.ui.plots.heatmap import LabeledHeatmap
    from attnlab.ui.stages.heads import HeadsPanel
    from attnlab.ui.window import app as appsettings
    from attnlab.ui.window.main_window import MainWindow

    app = appsettings.create_app(["long-ui-bench"])
    path = args.checkpoint or checkpoint(
        Path(tempfile.gettempdir()) / f"attnlab-long-{args.tokens}.safetensors", args.tokens
    )
    model = load_checkpoint(str(path))
    sampler = PeakSampler()
    sampler.start()
    window = MainWindow()
    window.resize(1280, 900)
    window.show()
    app.processEvents()
    session = window.session
    rows: dict[str, float] = {}
    held: dict[str, float] = {}

    stalls: dict[str, float] = {}

    def settle(until=lambda: True, timeout: float = 900.0, label: str = "") -> None:
        """Run the event loop until `until()`; the longest single pass is how long the GUI did not answer."""
        end = time.perf_counter() + timeout
        longest = 0.0
        while time.perf_counter() < end and not until():
            start = time.perf_counter()
            app.processEvents()
            longest = max(longest, time.perf_counter() - start)
            time.sleep(0.002)
        if label:
            stalls[label] = longest

    def step(label: str, action, until=lambda: True) -> None:
        start = time.perf_counter()
        action()
        settle(until)
        window.repaint()
        app.processEvents()
        rows[label] = time.perf_counter() - start
        held[label] = rss_bytes() / MIB
        print(f"{label:<16} {rows[label]:8.2f} s   RSS {held[label]:7.0f} MiB", flush=True)

    # start on Q, K, V (as `attnlab FILE --stage dec.0.self.qkv` does): the tokens stage lists every token
    session.stage_key = "dec.0.self.qkv"
    step(
        "trace",
        lambda: session.set_model(model, long_text(args.tokens)),
        lambda: session.trace is not None and not session.busy,
    )
    n = len(session.trace["tgt.tokens"])
    step("weights", lambda: session.set_stage("dec.0.self.weights"))
    heatmap = next(h for h in window.findChildren(LabeledHeatmap) if h.isVisible() and h.source() is not None)
    step("weights filled", lambda: None, lambda: not heatmap.loading())  # its one pass, off the GUI thread
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(args.shots / "weights-overview.png"))
    detail = heatmap.detail()
    assert detail is not None
    q0, k0 = n // 2, n // 2 - 48

    def zoom() -> None:
        heatmap.view_box().setRange(xRange=(k0 - 0.5, k0 + 63.5), yRange=(q0 - 0.5, q0 + 63.5), padding=0.0)
        detail.refresh()  # what the settle timer does SETTLE_MS after the last wheel step

    step("zoom 64 x 64", zoom)
    if args.shots:
        window.grab().save(str(args.shots / "weights-zoomed.png"))
        heatmap.view_box().setRange(xRange=(k0 + 32.5, k0 + 48.5), yRange=(q0 - 0.5, q0 + 15.5), padding=0.0)
        detail.refresh()
        settle(lambda: False, 0.2)
        window.repaint()
        window.grab().save(str(args.shots / "weights-zoomed-labels.png"))  # 16 × 16: each row has room
    pos = heatmap.scene_pos_of_cell(q0 + 10, k0 + 40)
    start = time.perf_counter()
    heatmap._on_mouse_moved(pos)
    hover = time.perf_counter() - start
    print(f"{'hover':<16} {hover:8.3f} s   {heatmap.readout_text()}", flush=True)
    step("heads", lambda: session.set_stage("dec.0.self.heads"))
    panel = window.findChild(HeadsPanel)
    step("heads filled", lambda: None, lambda: not panel.loading())
    settle(lambda: False, 0.2)
    if args.shots:
        window.grab().save(str(args.shots / "heads.png"))
    step("model view", window.model_view_dock.show)
    view = window.model_view_dock.view
    start = time.perf_counter()
    settle(lambda: not view.loading(), label="model view")
    rows["model view filled"] = time.perf_counter() - start + rows["model view"]
    held["model view filled"] = rss_bytes() / MIB
    print(
        f"{'model view filled':<16} {rows['model view filled']:8.2f} s   RSS {held['model view filled']:7.0f} MiB   "
        f"longest GUI pass while filling {stalls['model view']:.3f} s",
        flush=True,
    )
    window.repaint()
    app.processEvents()
    if args.shots:
        window.grab().save(str(args.shots / "model-view.png"))
    sampler.running = False
    sampler.join()
    peak = max(sampler.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) / MIB
    print(f"peak RSS {peak:.0f} MiB")
    result = {
        "tokens": n,
        "seconds": {k: round(v, 2) for k, v in rows.items()},
        "hover_s": round(hover, 3),
        "longest_gui_pass_while_filling_s": {k: round(v, 3) for k, v in stalls.items()},
        "held_mib": {k: round(v) for k, v in held.items()},
        "peak_mib": round(peak),
        "torch_threads": torch.get_num_threads(),
    }
    print(json.dumps(result))
    window.session.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
