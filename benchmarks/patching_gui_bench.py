"""The GUI thread while a patching map fills (issue 37: longest gap ≤ 50 ms): the real window, run A pinned,
run B current, View → Patching map filled row by row on the Session's worker while a 5 ms timer on the GUI
thread records the gaps between its ticks (benchmarks/gui_gaps.py).

    QT_QPA_PLATFORM=offscreen python benchmarks/patching_gui_bench.py [--kind residual|head|cross]

On the bundled translation model (3 + 3 layers): A "the black cat sees the small dog .", B "the white cat
sees the small dog .", decoder input "le chat".
"""

from __future__ import annotations

import argparse
import os
import tempfile

from _common import pct
from gui_gaps import GapMeter, report, settle, wait_until

os.environ.setdefault("ATTNLAB_SETTINGS", os.path.join(tempfile.mkdtemp(), "settings.ini"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

A, B, TGT = "the black cat sees the small dog .", "the white cat sees the small dog .", "le chat"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", default="residual", choices=("residual", "head", "cross"))
    args = parser.parse_args()
    from attnlab.checkpoints import load_bundled
    from attnlab.present.runtime import configure_torch
    from attnlab.ui.window import app as appsettings
    from attnlab.ui.window.main_window import MainWindow

    app = appsettings.create_app()
    configure_torch()
    window = MainWindow()
    window.show()
    s = window.session
    s.set_model(load_bundled("translation"), A, TGT)
    settle(app, s)
    s.pin()
    s.set_src(B, debounce=False)
    s.set_tgt(TGT, debounce=False)
    settle(app, s)
    window.open_patch_map()
    maps = window.patch_map_window
    maps.kind.setCurrentIndex(maps.kind.findData(args.kind))
    meter = GapMeter()
    meter.start()
    maps.fill()
    wait_until(app, lambda: maps.map is not None and maps.map.finished)
    settle(app, s)
    gaps = meter.stop()
    made = maps.map
    print(made.title() if made is not None else "no map")
    report([(f"patching map ({args.kind})", gaps)], pct)


if __name__ == "__main__":
    main()
