"""Dark theme: every control stays visible (an unchecked check box or radio button used to vanish)."""

import pytest
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QCheckBox, QRadioButton, QSlider, QWidget

from attnlab.ui.window import app as appsettings


@pytest.fixture
def dark(qapp):
    appsettings.apply_theme(True)
    yield
    appsettings.apply_theme(False)


def bright_pixels(widget: QWidget, width: int) -> int:
    """Pixels in the widget's left `width` columns clearly lighter than the dark window behind them."""
    image = widget.grab().toImage()
    window = QColor("#2b2d31").lightnessF()
    return sum(
        QColor(image.pixel(x, y)).lightnessF() > window + 0.3
        for x in range(min(width, image.width()))
        for y in range(image.height())
    )


@pytest.mark.parametrize("kind", [QCheckBox, QRadioButton])
def test_unchecked_indicators_are_outlined_in_the_dark_theme(qtbot, dark, kind):
    box = kind("")  # no text: only the indicator is drawn
    qtbot.addWidget(box)
    box.resize(24, 24)
    box.show()
    qtbot.waitExposed(box)
    assert bright_pixels(box, 20) >= 16  # an outline, not a dark square on a dark window


def test_slider_groove_and_dark_stylesheet_pieces(qtbot, dark):
    slider = QSlider()
    slider.setOrientation(slider.orientation().Horizontal)
    qtbot.addWidget(slider)
    slider.resize(120, 24)
    slider.show()
    qtbot.waitExposed(slider)
    assert bright_pixels(slider, 120) >= 40
    sheet = QApplication.instance().styleSheet()
    for rule in ("QToolTip", "QMenu", "QScrollBar::handle", "QRadioButton::indicator"):
        assert rule in sheet
    assert "@ICONS@" not in sheet and "dark-check.svg" in sheet
