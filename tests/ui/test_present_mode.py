"""In front of a class: presentation mode, the zoom, the clicker keys from any focused control, the layer /
sub-layer jumps and the stage search, driven through objectNames with key presses as a presenter would."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDockWidget, QWidget

from attnlab.present.stage_jumps import layer_jump, sublayer_jump
from attnlab.ui.plots.axes import TICK_POINT_SIZE, tick_font
from attnlab.ui.window import app as appsettings
from attnlab.ui.window import zoom
from attnlab.ui.window.main_window import MainWindow

WAIT = 15000


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(qtbot, generating_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is w, timeout=WAIT)
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_model(generating_model(), "the black cat sees the dog", "le chat")
    yield w
    w.set_presenting(False)
    w.set_zoom(1.0)
    w.close()


def keys(w):
    return [s.key for s in w.session.stages]


def index(w):
    return keys(w).index(w.session.stage_key)


@pytest.mark.parametrize("name", ["temperatureSlider", "temperatureSpin", "headSpin", "colormapCombo"])
def test_clicker_keys_step_even_when_a_control_has_focus(qtbot, win, name):
    control = win.findChild(QWidget, name)
    win.session.set_stage(keys(win)[3])
    before_t = win.session.options.temperature
    control.setFocus()
    qtbot.waitUntil(
        lambda: QApplication.focusWidget() is control or control.isAncestorOf(QApplication.focusWidget()), timeout=2000
    )
    for key, expected in (
        (Qt.Key.Key_Right, 4),
        (Qt.Key.Key_PageDown, 5),
        (Qt.Key.Key_Space, 6),
        (Qt.Key.Key_Left, 5),
        (Qt.Key.Key_PageUp, 4),
    ):
        qtbot.keyClick(QApplication.focusWidget(), key)
        assert index(win) == expected, (name, key)
    assert win.session.options.temperature == before_t  # the slider / spin box did not move


def test_a_text_box_with_the_cursor_keeps_its_arrows(qtbot, win):
    win.session.set_stage(keys(win)[2])
    edit = win.inputs.src
    edit.setFocus()
    edit.setCursorPosition(3)
    qtbot.keyClick(edit, Qt.Key.Key_Right)
    assert edit.cursorPosition() == 4 and index(win) == 2
    qtbot.keyClick(edit, Qt.Key.Key_Space)
    assert index(win) == 2 and " " in edit.text()


def test_present_folds_the_docks_and_t_and_esc_work(qtbot, win):
    docks = [d for d in win.findChildren(QDockWidget) if d.isVisible()]  # the model view starts hidden
    assert len(docks) >= 3 and not win.presenting
    win.findChild(type(win.present_action), "presentAction").trigger()
    assert win.presenting and not any(d.isVisible() for d in docks) and not win.menuBar().isVisible()
    assert zoom.factor() == pytest.approx(zoom.PRESENT_BOOST)
    win.explanation.setFocus()
    qtbot.keyClick(win.explanation, Qt.Key.Key_T)
    toggles = win.findChild(QDockWidget, "togglesDock")
    assert toggles.isVisible()
    qtbot.keyClick(win.explanation, Qt.Key.Key_T)
    assert not toggles.isVisible()
    qtbot.keyClick(win.explanation, Qt.Key.Key_Escape)
    assert not win.presenting and all(d.isVisible() for d in docks) and win.menuBar().isVisible()
    assert zoom.factor() == pytest.approx(1.0)


def test_zoom_scales_every_font_live_and_is_remembered(qtbot, win):
    win.session.set_stage("out.probs")
    before_app = QApplication.font().pointSizeF()
    before_tick = tick_font().pointSizeF()
    before_explanation = win.explanation.font().pointSizeF()
    for _ in range(3):
        qtbot.keyClick(win, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert win.zoom == 1.5
    assert QApplication.font().pointSizeF() == pytest.approx(before_app * 1.5)
    assert tick_font().pointSizeF() >= TICK_POINT_SIZE * 1.5 - 1e-6 > before_tick
    assert win.explanation.font().pointSizeF() == pytest.approx(before_explanation * 1.5)
    panel_font = win.current_panel().findChildren(type(win.stage_title))[0].font().pointSizeF()
    assert panel_font >= 12 * 1.5 - 1e-6  # the panel was made again with the larger note font
    assert float(win.settings.value(appsettings.ZOOM)) == 1.5
    for _ in range(20):
        win.findChild(type(win.present_action), "zoomInAction").trigger()
    assert win.zoom == zoom.MAX_ZOOM
    for _ in range(20):
        win.findChild(type(win.present_action), "zoomOutAction").trigger()
    assert win.zoom == zoom.MIN_ZOOM
    qtbot.keyClick(win, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert win.zoom == 1.0 and QApplication.font().pointSizeF() == pytest.approx(before_app)


def test_zoom_is_read_back_by_a_new_window(qtbot, win, generating_model):
    win.set_zoom(2.0)
    other = MainWindow()
    qtbot.addWidget(other)
    assert other.zoom == 2.0
    other.settings.setValue(appsettings.ZOOM, "nonsense")
    third = MainWindow()
    qtbot.addWidget(third)
    assert third.zoom == 1.0


def test_layer_and_sublayer_jumps_by_keyboard(qtbot, win):
    stages = win.session.stages
    win.session.set_stage(stages[0].key)
    win.navigator.setFocus()
    qtbot.keyClick(win.navigator, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    assert win.session.stage_key == layer_jump(stages, stages[0].key, 1)
    assert win.session.stage.group != stages[0].group
    here = win.session.stage_key
    qtbot.keyClick(win.navigator, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert win.session.stage_key == sublayer_jump(stages, here, 1)
    qtbot.keyClick(win.navigator, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert win.session.stage_key == here
    qtbot.keyClick(win.navigator, Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier)
    assert win.session.stage_key == stages[0].key


def test_stage_search_filters_and_enter_jumps(qtbot, win):
    win.navigator.setFocus()
    qtbot.keyClick(win.navigator, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    dialog = win.stage_search
    assert dialog.objectName() == "stageSearch" and dialog.isVisible()
    assert len(dialog.visible_keys()) == len(win.session.stages)
    qtbot.keyClicks(dialog.edit, "decoder layer 2 cross softmax")
    shown = dialog.visible_keys()
    assert shown == ["dec.1.cross.weights"]
    qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)
    assert win.session.stage_key == "dec.1.cross.weights" and not dialog.isVisible()
