"""Screenshots for the AppStream metainfo, made by the app itself (offscreen, the bundled translation model).

    python packaging/make_screenshots.py     # writes packaging/screenshots/{attention,cross-attention}.png

Each shot is the main window grabbed with QWidget.grab() at 1280×800, on one stage of the first trace.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["ATTNLAB_SETTINGS"] = str(Path(tempfile.mkdtemp()) / "settings.ini")  # never a person's own

from PySide6.QtCore import QEventLoop, QTimer

from attnlab.ui.window import app as appsettings
from attnlab.ui.window.main_window import MainWindow

OUT = Path(__file__).resolve().parent / "screenshots"
SIZE = (1280, 800)
SENTENCE = "the black cat sees the dog"
SHOTS = {"attention": "enc.0.self.weights", "cross-attention": "dec.1.cross.heads"}  # file name -> stage shown


def wait(signal=None, ms: int = 60000) -> None:
    """Run the event loop until `signal` fires (or `ms` pass), then a little longer for the repaint."""
    loop = QEventLoop()
    if signal is not None:
        signal.connect(loop.quit)
    QTimer.singleShot(ms, loop.quit)
    loop.exec()
    settle = QEventLoop()
    QTimer.singleShot(300, settle.quit)
    settle.exec()


def main() -> int:
    app = appsettings.create_app(sys.argv[:1])
    appsettings.apply_theme(False)
    window = MainWindow(settings=appsettings.make_settings())
    window.resize(*SIZE)
    window.show()

    from attnlab.checkpoints import load_bundled

    window.start(lambda: load_bundled("translation"), src=SENTENCE)
    wait(window.session.traceReady)
    if window.session.trace is None:
        print("no trace within a minute", file=sys.stderr)
        return 1
    OUT.mkdir(exist_ok=True)
    for name, stage in SHOTS.items():
        window.session.set_stage(stage)
        wait(ms=0)
        path = OUT / f"{name}.png"
        window.grab().save(str(path), "PNG")
        print(f"wrote {path} ({stage})")
    window.session.shutdown()
    app.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
