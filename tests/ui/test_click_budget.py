"""The one-click path, measured (CONTRIBUTING.md, "From a click to the repaint"): a real pre/post-norm click on
the LayerNorm combo is profiled from the combo's signal to the repaints of the panel and the schematic, on
the GUI thread and the run's worker thread, and the distinct attnlab functions called and attnlab files
touched must stay within BUDGET. A change that makes the click reach further than the budget fails here:
either the path grew by mistake, or the budget and CONTRIBUTING's figures are raised on purpose, together."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from concurrent.futures import thread as futures_thread
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

import attnlab
from attnlab.ui.plots.schematic import Schematic
from tests.support.tiny import build_tiny_model
from tests.ui.test_one_way_round import WAIT, PaintLog, _logged

# Measured on 2026-11-28 (branch w-checks off ef1ffd3, the click below, stable over runs): 587 functions in 92
# files (5,302 attnlab calls); the budget is that + ~15%. CONTRIBUTING.md states both.
BUDGET = {"functions": 774, "files": 125}
PACKAGE = str(Path(attnlab.__file__).resolve().parent)

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@dataclass(frozen=True)
class Reach:
    """What one click reached: attnlab calls, distinct functions and files (paths inside the package)."""

    calls: int
    functions: frozenset[tuple[str, int, str]]  # (file, first line, name)
    files: frozenset[str]


def reach(calls: Iterable[tuple[str, int, str]], package: str = PACKAGE) -> Reach:
    """The attnlab part of a list of Python calls (file, first line, function name)."""
    ours = [(file[len(package) + 1 :], line, name) for file, line, name in calls if file.startswith(package)]
    return Reach(len(ours), frozenset(ours), frozenset(file for file, _line, _name in ours))


def over_budget(seen: Reach, budget: dict[str, int]) -> list[str]:
    """A line per figure above its budget (empty: within it)."""
    figures = {"functions": len(seen.functions), "files": len(seen.files)}
    return [f"{what}: {figures[what]} > {limit}" for what, limit in budget.items() if figures[what] > limit]


class Profiler:
    """Records every Python call on the threads it is installed on (the GUI thread by `sys.setprofile`, the
    run's worker by wrapping each job of a `concurrent.futures` pool, new threads by `threading.setprofile`)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str]] = []
        self.threads: set[str] = set()
        self.on = False

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call" and self.on:
            code = frame.f_code
            self.calls.append((code.co_filename, code.co_firstlineno, code.co_name))
            self.threads.add(threading.current_thread().name)


@pytest.fixture
def profiler(monkeypatch):
    prof = Profiler()
    run = futures_thread._WorkItem.run

    def profiled_run(item: Any) -> None:  # the worker's jobs (Session's ThreadPoolExecutor)
        sys.setprofile(prof)
        try:
            run(item)
        finally:
            sys.setprofile(None)

    monkeypatch.setattr(futures_thread._WorkItem, "run", profiled_run)
    threading.setprofile(prof)
    yield prof
    threading.setprofile(None)  # type: ignore[arg-type]
    sys.setprofile(None)


def test_a_click_reaches_no_further_than_its_budget(qtbot, open_window, monkeypatch, profiler):
    log: list[str] = []
    monkeypatch.setattr(Schematic, "set_run", _logged(log, "Schematic.set_run", Schematic.set_run))
    w = open_window(build_tiny_model("encoder-decoder", norm_first=False))
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    w.session.set_stage("enc.0.norm1")
    panel = w.current_panel()
    panel.show_stage = _logged(log, "panel.show_stage", panel.show_stage)
    painted = PaintLog(panel, w.schematic, log)
    QApplication.instance().installEventFilter(painted)
    combo = w.controls.norm
    clicked = combo.findData("pre")
    combo.setCurrentIndex(clicked)  # what the person's click does to the combo itself
    log.clear()
    sys.setprofile(profiler)
    profiler.on = True  # from the combo's signal ...
    combo.activated.emit(clicked)
    qtbot.waitUntil(lambda: {"panel painted", "schematic painted"} <= set(log), timeout=WAIT)
    profiler.on = False  # ... to the repaint of the panel and of the schematic
    sys.setprofile(None)
    QApplication.instance().removeEventFilter(painted)

    seen = reach(profiler.calls)
    print(f"\nclick: {seen.calls} attnlab calls, {len(seen.functions)} functions, {len(seen.files)} files")
    assert w.session.trace.options.norm_first  # the click ran
    assert "engine/live.py" in seen.files, "the worker's run was not profiled: the measurement is broken"
    assert len(profiler.threads) >= 2  # the GUI thread and the worker
    assert over_budget(seen, BUDGET) == [], sorted(seen.files)


def test_the_budget_check_fails_when_exceeded():
    """The checker can fail: a synthetic click over budget is reported, figure by figure."""
    calls = [(f"{PACKAGE}/engine/f{i % 5}.py", i, f"f{i}") for i in range(12)] + [("/elsewhere/x.py", 1, "g")]
    seen = reach(calls)
    assert (seen.calls, len(seen.functions), len(seen.files)) == (12, 12, 5)
    assert over_budget(seen, {"functions": 12, "files": 5}) == []
    assert over_budget(seen, {"functions": 11, "files": 4}) == ["functions: 12 > 11", "files: 5 > 4"]
    assert over_budget(reach(calls + calls), {"functions": 12, "files": 5}) == []  # repeated calls: one function
