"""Colour-bar ticks: labels never run into each other, and a short symmetric bar still shows more than its 0."""

import pyqtgraph as pg
import pytest
from PySide6 import QtGui

from attnlab.ui.plots.axes import keep_ticks_apart
from attnlab.ui.plots.heatmap import tick_font


@pytest.fixture
def bar_axis(qtbot):
    return keep_ticks_apart(pg.AxisItem("right"))


def _shown(axis, lo, hi, size):
    """The (step, values) of the coarsest tick level pyqtgraph would draw."""
    step, values = axis.tickValues(lo, hi, size)[0]
    return step, [v for v in values if lo - 1e-9 <= v <= hi + 1e-9]


@pytest.mark.parametrize(("lo", "hi", "size"), [(-4.5, 4.5, 60), (-9.0, 9.0, 90), (-3.3, 3.3, 75), (0.0, 1.0, 75)])
def test_a_short_bar_shows_a_tick_each_side_of_zero_and_they_stay_apart(bar_axis, lo, hi, size):
    step, values = _shown(bar_axis, lo, hi, size)
    assert len(values) >= 3, values  # ±4.5 on 60 px showed "0" alone (the 1-2-5 step 5 left it by itself)
    need = QtGui.QFontMetrics(tick_font()).height() * 1.4
    assert step * size / (hi - lo) >= need - 1e-6  # labels at least 1.4 lines apart
    assert len(repr(step)) <= 4  # a plain number: 4.0, 0.3, never 0.30000000000000004
