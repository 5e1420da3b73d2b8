"""The window paints before torch loads: nothing the `attnlab` command imports up to its first paint may import
torch (~1.3 s; the model loads on a worker after the paint, ui/window/window_files.py `start`). Each case runs
the real command in a fresh Python, stops it where the start-up load would begin (after the first paint) and
reports whether torch was imported by then. Speed itself: benchmarks/startup_bench.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "resources" / "lessons" / "transformer-step-by-step.toml"  # shipped as attnlab.resources

# The app as `attnlab ARGS` starts it, except that the load after the first paint is replaced by a report.
CHILD = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from attnlab.ui.window.main_window import MainWindow

assert hasattr(MainWindow, "_run_pending_start"), "the start-up load moved: update this test"

def report(self):
    print("torch imported at the first paint:", "torch" in sys.modules, flush=True)
    QApplication.quit()

MainWindow._run_pending_start = report
QTimer.singleShot(60000, QApplication.quit)  # never hang the suite
from attnlab.cli import main
sys.exit(main(sys.argv[1:]))
"""


def first_paint_report(tmp_path: Path, args: list[str]) -> str:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ATTNLAB_SETTINGS": str(tmp_path / "settings.ini")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("torch imported")]
    assert lines, f"the window never reached its first paint: {done.stderr[-2000:]}"
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        [],  # the bundled translation model
        ["--present", "--stage", "enc.0.self.weights"],  # the classroom start: --stage is checked before the load
        ["--bundled", "language", "--stage", "dec.0.self.weights"],
        [str(LESSON)],  # a lesson
    ],
    ids=["plain", "present-stage", "language-stage", "lesson"],
)
def test_the_first_paint_needs_no_torch(tmp_path: Path, args: list[str]) -> None:
    assert first_paint_report(tmp_path, args) == "torch imported at the first paint: False"


def test_the_report_sees_torch_when_it_is_imported(tmp_path: Path) -> None:
    """The check can fail: the same child with torch imported first says so."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ATTNLAB_SETTINGS": str(tmp_path / "settings.ini")}
    done = subprocess.run(
        [sys.executable, "-c", "import torch\n" + CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert "torch imported at the first paint: True" in done.stdout, done.stderr[-2000:]
