"""Screenshots of the main stages in presentation mode, for review, with a clipped-label check.

    python benchmarks/classroom_shots.py                       # → shots/classroom/, exits 1 on clipped labels
    python benchmarks/classroom_shots.py --out /tmp/shots --sizes 1024x768 --themes dark --zoom 1.5

For each size (default 1024×768 and 1920×1080) and theme (light, dark) a window on the bundled translation
model enters presentation mode at that size and shows the tokens, an attention weights stage, all heads, the
token lines, an add & norm, an FFN, the output probabilities and the cross-attention weights; each is saved as
<out>/<size>-<theme>-<stage key>.png. Every token and tick label drawn in a plot (axes, text items, titles)
is mapped to its view and must lie inside it (attnlab.ui.window.clip_check); the offenders are listed and the exit
status is 1 when there are any. Runs offscreen unless QT_QPA_PLATFORM says otherwise.
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
from attnlab.ui.window.clip_check import main_stage_keys, shoot_stages

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
    offenders = []
    for size_text in args.sizes.split(","):
        size = tuple(int(n) for n in size_text.lower().split("x"))
        for theme in args.themes.split(","):
            window = window_for(model, size, theme == "dark", args.zoom)
            keys = main_stage_keys(window.session.stages)
            offenders += shoot_stages(window, keys, out, f"{size_text}-{theme}-")
            window.close()
            window.deleteLater()
    print(f"{len(list(out.glob('*.png')))} screenshots in {out}")
    if offenders:
        print(f"{len(offenders)} clipped labels:")
        print("\n".join(f"  {line}" for line in offenders))
        return 1
    print("no clipped labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
