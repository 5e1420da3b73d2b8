"""What a toggle that changes nothing leaves alone still follows every real change: a heatmap image given the
same values is not set again, but new values, new levels, a new shape or a new head count are shown; the
status bar's fixed-size timing label shows each new text and keeps room for the widest one at its font."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QFont

from attnlab.ui.plots.head_grid import HeadGrid
from attnlab.ui.plots.heatmap import LabeledHeatmap
from attnlab.ui.window.steady import FixedSizeLabel
from attnlab.ui.window.window_status import WIDEST_TIMING
from tests.support.tiny import shown_widget

WORDS = ["the", "black", "cat", "sees"]


def shown(image) -> np.ndarray:
    return np.asarray(image.image)


@pytest.fixture
def heatmap(qtbot):
    w = shown_widget(qtbot, LabeledHeatmap(), 500, 400)
    return w


def test_the_heatmap_keeps_an_unchanged_image_and_shows_every_change(heatmap):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    b = rng.standard_normal((4, 4)).astype(np.float32)
    image = heatmap.image_item()
    heatmap.set_data(a, WORDS, WORDS, levels=(-3.0, 3.0))
    first = image.image
    heatmap.set_data(a.copy(), WORDS, WORDS, levels=(-3.0, 3.0))  # equal values in a new array: left alone
    assert image.image is first
    heatmap.set_data(b, WORDS, WORDS, levels=(-3.0, 3.0))
    np.testing.assert_array_equal(shown(image), b)
    heatmap.set_data(a, WORDS, WORDS, levels=(-3.0, 3.0))  # and back
    np.testing.assert_array_equal(shown(image), a)
    heatmap.set_data(a, WORDS, WORDS, levels=(-1.0, 1.0))  # same values, new colour range
    assert tuple(image.getLevels()) == (-1.0, 1.0)
    assert heatmap.colorbar().levels() == (-1.0, 1.0)
    heatmap.set_data(a[:3, :2], WORDS[:3], WORDS[:2], levels=(-1.0, 1.0))  # a new shape
    np.testing.assert_array_equal(shown(image), a[:3, :2])
    nan = a.copy()
    nan[0, 0] = np.nan  # a masked cell: equal NaNs count as unchanged, a NaN that goes away does not
    heatmap.set_data(nan, WORDS, WORDS, levels=(-1.0, 1.0))
    heatmap.set_data(nan.copy(), WORDS, WORDS, levels=(-1.0, 1.0))
    assert heatmap.is_masked(0, 0)
    heatmap.set_data(a, WORDS, WORDS, levels=(-1.0, 1.0))
    np.testing.assert_array_equal(shown(image), a)
    assert not heatmap.is_masked(0, 0)


def test_the_head_grid_shows_new_heads_after_unchanged_ones(qtbot):
    grid = shown_widget(qtbot, HeadGrid(), 600, 500)
    rng = np.random.default_rng(1)
    two = rng.random((2, 4, 4)).astype(np.float32)  # [H, Tq, Tk]
    grid.set_heads(two, WORDS, WORDS)
    grid.set_heads(two.copy(), WORDS, WORDS)
    changed = two.copy()
    changed[1, 2, 3] = 0.123
    grid.set_heads(changed, WORDS, WORDS)
    for image, page in zip(grid.image_items(), changed, strict=True):
        np.testing.assert_array_equal(shown(image), page)
    four = rng.random((4, 4, 4)).astype(np.float32)  # a new head count makes new images
    grid.set_heads(four, WORDS, WORDS)
    assert len(grid.image_items()) == 4
    for image, page in zip(grid.image_items(), four, strict=True):
        np.testing.assert_array_equal(shown(image), page)


def test_the_fixed_size_label_shows_each_text_and_follows_its_font(qtbot):
    label = FixedSizeLabel(WIDEST_TIMING, "timing")
    qtbot.addWidget(label)
    label.show()
    size = label.size()
    assert label.width() >= label.fontMetrics().horizontalAdvance(WIDEST_TIMING)
    for text in ("compute 1.0 ms · paint 2.0 ms", "compute 123.4 ms · paint 9.9 ms", ""):
        label.setText(text)
        assert label.text() == text
        assert label.size() == size
    font = QFont(label.font())
    font.setPointSizeF(font.pointSizeF() * 2)
    label.setFont(font)  # zoom: room for the widest text at the new size
    assert label.width() >= label.fontMetrics().horizontalAdvance(WIDEST_TIMING) > size.width()
    assert label.height() > size.height()


def test_colour_bar_axes_follow_new_levels_without_an_si_scale(heatmap):
    rng = np.random.default_rng(2)
    values = rng.standard_normal((4, 4)).astype(np.float32)
    bar = heatmap.colorbar()
    heatmap.set_colorbar_label("value")
    for lo, hi in ((-0.002, 0.002), (-5.0, 5.0), (0.0, 0.5)):
        heatmap.set_data(values * hi, WORDS, WORDS, levels=(lo, hi))
        assert tuple(bar.axis.range) == pytest.approx((lo, hi))  # the ticks follow the levels
        for side in ("left", "right", "top", "bottom"):
            axis = bar.getAxis(side)
            assert axis.autoSIPrefixScale == 1.0 and "(x" not in axis.labelString()
    assert "value" in bar.getAxis("left").labelString()
    plot = heatmap.plot_item()
    for side in ("top", "right"):  # hidden: they follow the view but show nothing
        assert not plot.getAxis(side).isVisible() and not plot.getAxis(side).autoSIPrefix
