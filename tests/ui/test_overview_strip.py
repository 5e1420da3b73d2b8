"""Presenting, the overview stays on screen (issue 32): a compact strip of the model above the stage, the current
stage's group and part highlighted; a click on a box goes to its first stage and leaves the keys where they
were; it takes at most ~60 px from the plot."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from attnlab.ui.window.overview_strip import MAX_HEIGHT, group_boxes, part_boxes

WAIT = 15000

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(open_window, generating_model):
    w = open_window(generating_model(), size=(1024, 768))  # tests/conftest.py
    yield w
    w.set_presenting(False)
    w.close()


def test_the_strip_shows_only_while_presenting(qtbot, win):
    strip = win.overview_strip
    assert not strip.isVisible()  # the Architecture dock is the overview then
    win.set_presenting(True, full_screen=False)
    assert strip.isVisible() and 0 < strip.height() <= MAX_HEIGHT
    win.set_presenting(False)
    assert not strip.isVisible()


def test_the_strip_has_every_group_and_highlights_the_current_stage(qtbot, win):
    win.set_presenting(True, full_screen=False)
    stages = win.session.stages
    groups = list(dict.fromkeys(s.group for s in stages))  # in pipeline order
    assert [b.part for b in group_boxes(stages)] == groups
    strip = win.overview_strip
    for stage in (stages[0], *(s for s in stages if s.kind in ("addnorm", "ffn", "weights")), stages[-1]):
        win.session.set_stage(stage.key)
        group, part = strip.highlighted()
        assert group == stage.group
        parts = [b.part for b in part_boxes(stages, stage.group)]
        assert part in parts and part in (stage.key, stage.schematic_box)
        drawn = {b.part for _r, b in strip.box_rects()}
        assert group in drawn and part in drawn  # both highlighted boxes are drawn


def test_a_click_on_a_box_jumps_there_and_keeps_the_keys(qtbot, win):
    win.set_presenting(True, full_screen=False)
    strip, stages = win.overview_strip, win.session.stages
    qtbot.waitUntil(lambda: strip.box_rects() != [], timeout=2000)
    focused = QApplication.focusWidget()
    target = next(s for s in stages if s.group.startswith("Decoder layer"))
    rect = next(r for r, b in strip.box_rects() if b.part == target.group)
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(int(rect.center().x()), int(rect.center().y())))
    assert win.session.stage_key == target.key  # the group's first stage
    assert strip.highlighted()[0] == target.group
    assert QApplication.focusWidget() is focused  # the clicker keys still step
    ffn = next(s for s in stages if s.group == target.group and s.kind == "ffn")
    rect = next(r for r, b in strip.box_rects() if b.part == ffn.schematic_box)  # the bottom row: its parts
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(int(rect.center().x()), int(rect.center().y())))
    assert win.session.stage_key == ffn.key
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Right)
    keys = [s.key for s in stages]
    assert keys.index(win.session.stage_key) == keys.index(ffn.key) + 1
