"""Presenting, the clicker keys step whatever has the focus (issue 32): the stage list, the source box, the
decoder-input box, a plot or a toggle. Every key is a real key event sent to the widget that has the focus
(as a keyboard or clicker delivers it); after each, the sentence and the decoder input are as they were.
Typing into the sentence takes a click into it or Ctrl+L, and Enter or Esc gives the keys back."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QComboBox, QGraphicsView, QWidget

from attnlab.ui.window.clicker import is_text_box
from attnlab.ui.window.main_window import MainWindow
from tests.support.tiny import WINDOW_SRC, WINDOW_TGT

WAIT = 15000
SENTENCE, DECODER = WINDOW_SRC, WINDOW_TGT

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(qtbot, open_window, generating_model):
    w = open_window(generating_model())  # tests/conftest.py: traced on SENTENCE / DECODER
    w.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is w, timeout=WAIT)
    yield w
    w.set_presenting(False)
    w.close()


def index(w: MainWindow) -> int:
    return [s.key for s in w.session.stages].index(w.session.stage_key)


def press(qtbot, key: Qt.Key, modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    """The key as a keyboard sends it: to the widget with the focus."""
    target = QApplication.focusWidget()
    assert target is not None
    qtbot.keyClick(target, key, modifier)


def texts(w: MainWindow) -> tuple[str, str, str, str]:
    return w.session.src, w.session.tgt, w.inputs.src.text(), w.inputs.tgt.text()


def focus(qtbot, widget: QWidget) -> None:
    widget.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is widget, timeout=2000)


def a_plot(w: MainWindow) -> QWidget:
    """A plot of an attention-weights stage (the first stage shows token chips)."""
    w.session.set_stage(next(s.key for s in w.session.stages if s.kind == "weights"))
    return w.current_panel().findChildren(QGraphicsView)[0]


def a_toggle(w: MainWindow) -> QWidget:
    return w.controls.findChildren(QComboBox)[0]


STARTS = {  # the widget that has the focus when F5 is pressed
    "stage list": lambda w: w.navigator,
    "source": lambda w: w.inputs.src,
    "decoder input": lambda w: w.inputs.tgt,
    "plot": a_plot,
    "toggle": a_toggle,
}


def walk_the_keys(qtbot, w: MainWindow, before: tuple[str, str, str, str]) -> None:
    """→ ← Space PageDown PageUp Home End step, E and T toggle; the sentence never changes."""
    last = len(w.session.stages) - 1
    w.session.set_stage(w.session.stages[3].key)
    for key, expected in (
        (Qt.Key.Key_Right, 4),
        (Qt.Key.Key_Space, 5),
        (Qt.Key.Key_PageDown, 6),
        (Qt.Key.Key_Left, 5),
        (Qt.Key.Key_PageUp, 4),
        (Qt.Key.Key_End, last),
        (Qt.Key.Key_Home, 0),
    ):
        press(qtbot, key)
        assert index(w) == expected, key
        assert texts(w) == before, key
    shown = w.explanation.isVisible()
    press(qtbot, Qt.Key.Key_E)
    assert w.explanation.isVisible() is not shown and texts(w) == before
    press(qtbot, Qt.Key.Key_E)
    assert w.explanation.isVisible() is shown and texts(w) == before
    press(qtbot, Qt.Key.Key_T)
    assert w.controls_dock.isVisible() and texts(w) == before
    press(qtbot, Qt.Key.Key_T)
    assert not w.controls_dock.isVisible() and texts(w) == before
    assert not is_text_box(QApplication.focusWidget())  # hiding the toggles left the focus out of the boxes


@pytest.mark.parametrize("start", list(STARTS))
def test_f5_from_any_focus_then_every_key_steps_and_esc_leaves(qtbot, win, start):
    before = texts(win)
    focus(qtbot, STARTS[start](win))
    press(qtbot, Qt.Key.Key_F5)
    assert win.presenting
    assert not is_text_box(QApplication.focusWidget()), "hiding the docks gave the focus to a text box"
    walk_the_keys(qtbot, win, before)
    press(qtbot, Qt.Key.Key_Escape)
    assert not win.presenting and texts(win) == before


@pytest.mark.parametrize("start", list(STARTS))
def test_presenting_keys_step_when_the_focus_moves_onto_any_widget(qtbot, win, start):
    """The focus put on each widget while presenting (as Tab or a program would): a text box hands it back to
    the stage, and keys sent to that box all the same still step and type nothing; every other widget keeps
    the focus and the keys step."""
    before = texts(win)
    win.set_presenting(True, full_screen=False)
    if start == "toggle":
        press(qtbot, Qt.Key.Key_T)  # the toggles dock back, to focus one of its widgets
    if start == "stage list":
        win.nav_dock.show()
    widget = STARTS[start](win)
    widget.setFocus()
    QApplication.processEvents()
    assert not is_text_box(QApplication.focusWidget())
    if not is_text_box(widget):
        assert QApplication.focusWidget() is widget
    for key in (Qt.Key.Key_Right, Qt.Key.Key_Left):  # to the widget itself, focused or not
        here = index(win)
        qtbot.keyClick(widget, key)
        assert index(win) == here + (1 if key == Qt.Key.Key_Right else -1) and texts(win) == before
        assert not is_text_box(QApplication.focusWidget())
    for key in (Qt.Key.Key_A, Qt.Key.Key_Backspace, Qt.Key.Key_Delete):
        qtbot.keyClick(widget, key)
        assert texts(win) == before, key
    qtbot.keyClick(widget, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)  # a paste
    assert texts(win) == before
    qtbot.keyClick(widget, Qt.Key.Key_E)
    assert win.explanation.isVisible() and texts(win) == before
    press(qtbot, Qt.Key.Key_Escape)
    assert not win.presenting and texts(win) == before


def test_a_click_into_the_sentence_types_and_enter_gives_the_keys_back(qtbot, win):
    win.set_presenting(True, full_screen=False)
    edit = win.inputs.src
    qtbot.mouseClick(edit, Qt.MouseButton.LeftButton, pos=QPoint(edit.width() - 40, edit.height() // 2))
    qtbot.waitUntil(lambda: QApplication.focusWidget() is edit, timeout=2000)
    edit.end(False)
    here = index(win)
    press(qtbot, Qt.Key.Key_Space)
    press(qtbot, Qt.Key.Key_E)
    press(qtbot, Qt.Key.Key_Left)  # the cursor moves, the stage does not
    assert edit.text() == SENTENCE + " e" and index(win) == here and edit.cursorPosition() == len(SENTENCE) + 1
    assert "Typing" in win.present_hint.text()
    press(qtbot, Qt.Key.Key_Return)
    assert not is_text_box(QApplication.focusWidget()) and win.presenting and "Esc: leave" in win.present_hint.text()
    press(qtbot, Qt.Key.Key_Right)
    assert index(win) == here + 1 and edit.text() == SENTENCE + " e"


def test_ctrl_l_types_into_the_source_and_esc_gives_the_keys_back(qtbot, win):
    win.set_presenting(True, full_screen=False)
    before = texts(win)
    press(qtbot, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is win.inputs.src
    win.inputs.src.end(False)
    press(qtbot, Qt.Key.Key_S)
    assert win.inputs.src.text() == SENTENCE + "s"
    press(qtbot, Qt.Key.Key_Escape)  # typing done: still presenting, the keys step again
    assert win.presenting and not is_text_box(QApplication.focusWidget())
    here = index(win)
    press(qtbot, Qt.Key.Key_Right)
    assert index(win) == here + 1
    press(qtbot, Qt.Key.Key_Escape)
    assert not win.presenting and texts(win)[1] == before[1]


def test_outside_presentation_a_text_box_keeps_its_keys(qtbot, win):
    edit = win.inputs.src
    focus(qtbot, edit)
    edit.setCursorPosition(3)
    here = index(win)
    press(qtbot, Qt.Key.Key_Right)
    press(qtbot, Qt.Key.Key_E)
    assert edit.cursorPosition() == 5 and index(win) == here and edit.text() == SENTENCE[:4] + "e" + SENTENCE[4:]


def test_the_status_bar_says_the_keys_and_hides_the_timings_while_presenting(qtbot, win):
    assert win.timing_label.isVisibleTo(win)
    win.set_presenting(True, full_screen=False)
    hint = win.present_hint.text()
    assert win.present_hint.isVisible() and not win.timing_label.isVisibleTo(win)
    for key in ("→", "E", "T", "Ctrl+L", "Esc"):
        assert key in hint
    assert not win.statusBar().currentMessage()  # no second copy of the hint over the notices
    win.set_presenting(False)
    assert win.timing_label.isVisibleTo(win) and not win.present_hint.isVisible()
