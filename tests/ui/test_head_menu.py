"""Right-click a head to ablate it (issue 12, item 3): the all-heads grid offers the menu for the head under the
mouse, a single-head panel for the head it shows; the choice goes through the Session's RunOptions and the
"Ablate head" control shows it."""

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu

from attnlab.engine import names
from attnlab.ui.plots.heatmap import LabeledHeatmap

WAIT = 15000
SITE = "dec.0.cross"


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(open_window, tiny_model):
    return open_window(tiny_model("encoder-decoder", seed=3), size=(1300, 900))


def right_click(view, scene_pos):
    """A right click on a plot: the mouse click (the grid reads it) and the context-menu event the platform
    sends with it (QTest sends only the first), which a single-head panel reads."""
    pos = view.mapFromScene(scene_pos)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.RightButton, pos=pos)
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, view.viewport().mapToGlobal(pos))
    QApplication.sendEvent(view.viewport(), event)


def pick(qtbot, win, panel, action_name):
    """Trigger one entry of the head menu that the right click opened; returns the new trace."""
    menu = panel.findChild(QMenu, "headAblationMenu")
    assert menu is not None and menu.isVisible()
    action = next(a for a in menu.actions() if a.objectName() == action_name)
    assert action.isEnabled()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        action.trigger()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=WAIT)
    menu.close()
    return win.session.trace, menu


def test_grid_right_click_ablates_the_head_under_the_mouse(qtbot, win):
    win.session.set_stage(names.site_entry(SITE, "heads"))
    panel = win.current_panel()
    grid = panel._grid
    right_click(grid.graphics_view(), grid.scene_pos_of_head(2))
    assert len(panel.findChildren(QMenu)) == 1  # one menu, not one per event
    trace, menu = pick(qtbot, win, panel, "ablate-zero")
    assert "head 3 of decoder layer 1 cross-attention" in [a.text() for a in menu.actions()][0]
    assert trace.options.ablate == ((SITE, 2, "zero"),)
    d_k = trace.config.d_model // trace.n_heads
    assert np.all(trace[names.site_entry(SITE, "concat")][:, 2 * d_k : 3 * d_k].numpy() == 0)
    assert win.session.view.head == 2 and win.controls.ablate.currentData() == "zero"  # the control shows it
    right_click(grid.graphics_view(), grid.scene_pos_of_head(2))
    menu = panel.findChild(QMenu, "headAblationMenu")
    checked = {a.objectName(): a.isChecked() for a in menu.actions() if a.isCheckable()}
    assert checked == {"ablate-zero": True, "ablate-mean": False}
    trace, _ = pick(qtbot, win, panel, "ablate-clear")
    assert trace.options.ablate == () and win.controls.ablate.currentData() is None


@pytest.mark.parametrize("kind", ["scaled", "weights"])
def test_single_head_panel_right_click_ablates_the_shown_head(qtbot, win, kind):
    win.session.set_stage(names.site_entry(SITE, kind))
    win.session.set_view(head=1)
    panel = win.current_panel()
    heatmap = panel.findChild(LabeledHeatmap)
    right_click(heatmap.graphics_view(), heatmap.scene_pos_of_cell(0, 0))
    menu = panel.findChild(QMenu, "headAblationMenu")
    assert not next(a for a in menu.actions() if a.objectName() == "ablate-clear").isEnabled()  # nothing yet
    trace, _ = pick(qtbot, win, panel, "ablate-mean")
    assert trace.options.ablate == ((SITE, 1, "mean"),)
    assert win.controls.ablate.currentData() == "mean"


def test_no_menu_off_an_attention_site(qtbot, win):
    win.session.set_stage(next(s for s in win.session.stages if s.kind == "ffn").key)
    panel = win.current_panel()
    heatmap = panel.findChild(LabeledHeatmap)
    right_click(heatmap.graphics_view(), heatmap.scene_pos_of_cell(0, 0))
    assert panel.findChild(QMenu, "headAblationMenu") is None
