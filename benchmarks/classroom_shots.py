"""Screenshots of every stage kind in presentation mode, and the pixels per matrix row a student sees.

    python benchmarks/classroom_shots.py                       # → shots/classroom/, exits 1 below a floor
    python benchmarks/classroom_shots.py --out /tmp/shots --sizes 1024x768 --themes dark --zoom 1.5

For each size (default 1024×768 and 1920×1080) and theme (light, dark) a window on the bundled translation
model enters presentation mode at that size and shows the first stage of every kind; each is saved as
<out>/<size>-<theme>-<stage key>.png. For every heatmap the stage shows, the screen pixels per matrix row (its
image mapped into its view's pixels / its rows, attnlab.ui.window.pixel_check) are printed per stage and
checked against the floors of issues 26 and 32 (pixel_check.FLOORS): one head's attention map and the mask ≥ 36 px
per row, each head of the all-heads grid ≥ 16 px, add & norm ≥ 24 px, every other matrix (positional encoding, …)
≥ 12 px. The exit status is 1
when any heatmap is below its floor. (It used to check only that no label was clipped, which passed on screens
where the heads were 1-px lines.) Runs offscreen unless QT_QPA_PLATFORM says otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("ATTNLAB_SETTINGS", os.path.join(tempfile.mkdtemp(), "settings.ini"))

from attnlab.checkpoints import load_bundled
from attnlab.ui.window.app import apply_theme, create_app
from attnlab.ui.window.pixel_check import RowPixels, floor_of, row_pixels  # the floors: pixel_check.FLOORS

SENTENCE, DECODER_INPUT = "the black cat sees the small dog", "le chat noir voit le"


def window_for(model, size: tuple[int, int], dark: bool, zoom: float):
    from attnlab.ui.window.main_window import MainWindow

    apply_theme(dark)
    window = MainWindow()
    window.set_dark(dark)
    window.set_zoom(zoom)
    window.show()
    window.set_presenting(True, full_screen=False)
    window.resize(*size)
    window.session.set_model(model, SENTENCE, DECODER_INPUT)
    app = create_app()
    deadline = time.monotonic() + 60
    while window.session.trace is None or window.session.busy:
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() > deadline:
            raise SystemExit("no trace within 60 s")
    return window


def settled(window) -> list[RowPixels]:
    """The shown panel's heatmaps once two passes of the event loop in a row leave them as they were."""
    from PySide6.QtWidgets import QApplication, QScrollArea

    scroll = window.findChild(QScrollArea, "panelScroll")
    before: list[RowPixels] = []
    for i in range(60):  # sizes settle over several passes (a plot's least height follows its axes' new sizes)
        QApplication.processEvents()
        now = row_pixels(window.current_panel(), scroll.viewport())
        if now == before and i >= 10:
            break
        before = now
    return before


def shoot_kinds(window, out: Path, tag: str) -> list[str]:
    """Show the first stage of every kind, save it, print its px/row; the lines of the heatmaps below a floor."""
    low: list[str] = []
    seen: set[str] = set()
    for stage in window.session.stages:
        if stage.kind in seen:
            continue
        seen.add(stage.kind)
        window.session.set_stage(stage.key)
        maps = settled(window)
        window.grab().save(str(out / f"{tag}{stage.key}.png"))
        floor = floor_of(stage.kind)
        rows = ", ".join(f"{m.px_per_row:.1f}" for m in maps) or "no heatmap"
        least = min((m.px_per_row for m in maps), default=None)
        verdict = "" if least is None else ("ok" if least >= floor else f"BELOW {floor:g}")
        print(f"{tag}{stage.kind:<14} {stage.key:<28} px/row {rows}  (floor {floor:g}) {verdict}")
        low += [f"{tag}{stage.key}: {m.line()} < {floor:g}" for m in maps if m.px_per_row < floor]
    return low


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="shots/classroom")
    parser.add_argument("--sizes", default="1024x768,1920x1080")
    parser.add_argument("--themes", default="light,dark")
    parser.add_argument("--zoom", type=float, default=1.0)
    args = parser.parse_args(argv)
    create_app()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = load_bundled("translation")
    low = []
    for size_text in args.sizes.split(","):
        size = tuple(int(n) for n in size_text.lower().split("x"))
        for theme in args.themes.split(","):
            window = window_for(model, size, theme == "dark", args.zoom)
            low += shoot_kinds(window, out, f"{size_text}-{theme}-")
            window.set_presenting(False)
            window.close()
            window.deleteLater()
    print(f"{len(list(out.glob('*.png')))} screenshots in {out}")
    if low:
        print(f"{len(low)} heatmaps below their floor of pixels per row:")
        print("\n".join(f"  {line}" for line in low))
        return 1
    print("every heatmap at or above its floor of pixels per row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
