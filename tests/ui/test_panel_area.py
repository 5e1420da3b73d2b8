"""The stage panels never widen the window (ui/window/panel_area.py): the stack is sized by the panel shown, and a panel
wider than its room scrolls. Before, the layer input's three maps (588 px) grew a window at its minimum width
past a small screen's edge the first time the stage was shown, and it stayed that wide for every stage."""

from __future__ import annotations

import pytest
from PySide6 import QtWidgets

from attnlab.ui.window.panel_area import CurrentPageStack

pytestmark = pytest.mark.usefixtures("isolated_settings")


def page(min_width: int) -> QtWidgets.QWidget:
    widget = QtWidgets.QWidget()
    widget.setMinimumSize(min_width, 50)
    QtWidgets.QVBoxLayout(widget).addWidget(QtWidgets.QLabel("x"))
    return widget


def test_the_stack_takes_the_size_hints_of_its_current_page_only(qtbot):
    stack = CurrentPageStack()
    qtbot.addWidget(stack)
    narrow, wide = page(100), page(700)
    for p in (narrow, wide):
        stack.addWidget(p)
    plain = QtWidgets.QStackedWidget()
    qtbot.addWidget(plain)
    for p in (page(100), page(700)):
        plain.addWidget(p)
    stack.setCurrentWidget(wide)
    assert stack.minimumSizeHint().width() == 700
    stack.setCurrentWidget(narrow)
    assert stack.minimumSizeHint().width() == 100 < plain.minimumSizeHint().width()  # Qt's own keeps the widest


def test_a_wide_panel_scrolls_instead_of_widening_a_window_at_its_minimum(open_window, tiny_model):
    window = open_window(tiny_model("encoder-decoder", n_encoder_layers=1))
    window.resize(window.minimumSizeHint())  # a small screen: the window at its least width
    window.session.set_stage("src.tokens")
    QtWidgets.QApplication.processEvents()
    least, size = window.minimumSizeHint().width(), window.width()
    scroll = window.findChild(QtWidgets.QScrollArea, "panelScroll")
    window.session.set_stage("src.input")  # embedding + position = input: three maps, folded one under the other
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    panel = window.current_panel()
    assert type(panel).__name__ == "InputSumPanel"
    assert panel.minimumSizeHint().width() <= scroll.viewport().width()  # it fits, folded (ui/stages/folding_row)
    assert scroll.horizontalScrollBar().maximum() == 0 and window.width() == size
    panel.setMinimumWidth(scroll.viewport().width() + 200)  # a panel that cannot fold (a wide matrix)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    assert window.minimumSizeHint().width() == least and window.width() == size  # the window stays put ...
    assert scroll.horizontalScrollBar().maximum() > 0 and panel.width() >= panel.minimumSizeHint().width()  # scrolls
    panel.setMinimumWidth(0)
    window.session.set_stage("src.tokens")  # back to a narrow panel: it fits again, no scroll bar
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    assert scroll.horizontalScrollBar().maximum() == 0


def test_the_stage_area_keeps_the_panel_whole_in_height(open_window, tiny_model):
    """Only sideways scrolling: the splitter gives the panel its least height and the explanation what is left
    (presentation mode on a 1024×768 screen gives the explanation a large share)."""
    # wide enough for add & norm's maps side by side (a narrower centre stacks them, and then the panel scrolls)
    window = open_window(tiny_model("encoder-decoder", n_encoder_layers=1), size=(1400, 640))
    scroll = window.findChild(QtWidgets.QScrollArea, "panelScroll")
    split = window.findChild(QtWidgets.QSplitter, "centralSplitter")
    window.session.set_stage("src.tokens")  # a short panel first, then the explanation takes most of the room
    QtWidgets.QApplication.processEvents()
    split.setSizes([10, sum(split.sizes()) - 10])
    window.session.set_stage("enc.0.norm1")  # add & norm: three maps over two bar plots and a note
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    panel = window.current_panel()
    assert type(panel).__name__ == "AddNormPanel"
    assert scroll.viewport().height() >= panel.minimumSizeHint().height()
    assert scroll.verticalScrollBar().maximum() == 0


def test_a_click_on_a_panel_background_does_not_take_the_focus(open_window, tiny_model, qtbot):
    from PySide6.QtCore import QPoint, Qt

    window = open_window(tiny_model("encoder-decoder", n_encoder_layers=1))
    window.session.set_stage("src.tokens")
    QtWidgets.QApplication.processEvents()
    scroll = window.findChild(QtWidgets.QScrollArea, "panelScroll")
    window.navigator.setFocus()
    qtbot.mouseClick(scroll.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(2, scroll.viewport().height() - 2))
    assert not scroll.hasFocus()
