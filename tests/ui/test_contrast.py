"""Every text a class reads reaches 4.5:1 contrast (WCAG 2.x, success criterion 1.4.3) in both themes (issue 32):
the trace name beside the stage title, the shapes line, the notice, the hints, the token chips' small lines.
Colours are read as the widgets have them after the stylesheet (their palettes), and from the HTML of the title."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QColor, QPalette

from attnlab.ui.stages import token_chips
from attnlab.ui.window import app as appsettings
from attnlab.ui.window.main_window import MainWindow, stage_heading

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
LEAST = 4.5


def luminance(colour: QColor) -> float:
    """WCAG relative luminance: sRGB channels linearised, weighted 0.2126 R + 0.7152 G + 0.0722 B."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def over(ink: QColor, background: QColor) -> QColor:
    """`ink` as drawn on `background` (a translucent ink, like Fusion's placeholder text, is blended)."""
    a = ink.alphaF()
    return QColor.fromRgbF(
        *(a * i + (1 - a) * b for i, b in zip(ink.getRgbF()[:3], background.getRgbF()[:3], strict=True))
    )


def contrast(a: QColor, b: QColor) -> float:
    a = over(a, b)
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_formula_matches_the_wcag_examples():
    assert contrast(QColor("#000000"), QColor("#ffffff")) == pytest.approx(21.0)
    assert contrast(QColor("#777777"), QColor("#ffffff")) == pytest.approx(4.48, abs=0.01)  # the known near miss
    assert contrast(QColor("#808080"), QColor("#efefef")) < LEAST  # the trace name: 3.4:1
    assert contrast(QColor(0, 0, 0, 128), QColor("#efefef")) < LEAST  # Fusion's placeholder text (#777 drawn)


@pytest.mark.parametrize("dark", [False, True])
def test_secondary_texts_reach_4_5_to_1(qtbot, dark):
    appsettings.apply_theme(dark)
    window = MainWindow()
    qtbot.addWidget(window)
    try:
        window.show()
        qtbot.waitExposed(window)
        background = window.palette().color(QPalette.ColorRole.Window)
        low = []
        for label in (window.stage_shapes, window.notice_label):
            label.ensurePolished()
            ink = label.palette().color(label.foregroundRole())
            if contrast(ink, background) < LEAST:
                low.append(f"{label.objectName()}: {ink.name()} on {background.name()}")
        stage = window.session.stages[0] if window.session.stages else None
        html = stage_heading(stage) if stage is not None else f"<span style='color:{appsettings.muted_colour()}'>"
        span = QColor(re.search(r"color:\s*([^;'\"]+)", html).group(1))
        if span.name() == appsettings.muted_colour():  # the span names the palette's colour (alpha and all)
            span = window.palette().color(QPalette.ColorRole.PlaceholderText)
        if contrast(span, background) < LEAST:
            low.append(f"trace name: {span.name()} on {background.name()}")
        assert not low, low
    finally:
        window.errors.uninstall()
        window.session.shutdown()
        window.close()
        appsettings.apply_theme(False)


def test_the_token_chips_small_lines_reach_4_5_to_1():
    for kind, (fill, ink, _border, _style) in token_chips.CHIP_LOOK.items():
        for colour in (ink, token_chips.CHIP_NOTE_INK):
            assert contrast(QColor(colour), QColor(fill)) >= LEAST, (kind, colour, fill)
