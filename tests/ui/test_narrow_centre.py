"""Every stage kind fits the centre column of the normal window on a 1024×768 screen (issue 32: the layer input
and Q/K/V rows of three maps needed 588 and 522 px of a 488-px stage area, which scrolled sideways with the
right-hand map cut off): rows of maps fold one under the other there (ui/stages/folding_row.py) and stand side by
side again where the room is."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication, QScrollArea

from attnlab.checkpoints import load_bundled
from attnlab.ui.stages.folding_row import FoldingRow
from attnlab.ui.window.geometry import dock_widths

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
WAIT = 20000


def settle(rounds: int = 30) -> None:
    for _ in range(rounds):
        QApplication.processEvents()


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


@pytest.fixture
def window(open_window, translation):
    return open_window(translation)  # tests/conftest.py


def test_no_stage_scrolls_sideways_in_a_1024_px_window(qtbot, window):
    w = window
    w.resize(1020, 743)  # the inside of a window framed by openbox on a 1024×768 screen
    w.resizeDocks([w.nav_dock, w.controls_dock], list(dock_widths(QRect(0, 0, 1024, 768))), Qt.Orientation.Horizontal)
    scroll = w.findChild(QScrollArea, "panelScroll")
    seen: set[str] = set()
    folded: set[str] = set()
    for stage in w.session.stages:
        if stage.kind in seen:
            continue
        seen.add(stage.kind)
        w.session.set_stage(stage.key)
        settle()
        assert scroll.horizontalScrollBar().maximum() == 0, f"{stage.key} scrolls sideways at 1024×768"
        folded |= {stage.kind for row in w.current_panel().findChildren(FoldingRow) if row.folded()}
    assert scroll.viewport().width() < 500 and {"input", "qkv"} <= folded  # the rows that did not fit, folded


def test_rows_stand_side_by_side_where_there_is_room(qtbot, window):
    w = window
    w.resize(1600, 1000)
    for key in ("src.input", "enc.0.self.qkv"):
        w.session.set_stage(key)
        settle()
        rows = w.current_panel().findChildren(FoldingRow)
        assert rows and not any(row.folded() for row in rows), key


def test_the_toggles_dock_gets_its_width_back_after_presenting(qtbot, window):
    """T while presenting widens the Toggles dock to its rows (no elided choice); leaving gives the normal window
    its narrow dock back, so the centre column keeps its room."""
    w = window
    w.resize(1020, 743)
    w.resizeDocks([w.nav_dock, w.controls_dock], list(dock_widths(QRect(0, 0, 1024, 768))), Qt.Orientation.Horizontal)
    settle()
    before = w.controls_dock.width()
    w.set_presenting(True, full_screen=False)
    w.resize(1020, 743)
    settle()
    w.toggle_controls_dock()  # T
    qtbot.waitUntil(lambda: w.controls_dock.width() > before + 20, timeout=5000)
    w.set_presenting(False)
    w.resize(1020, 743)
    qtbot.waitUntil(lambda: abs(w.controls_dock.width() - before) <= 4, timeout=5000)
