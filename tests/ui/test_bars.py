"""SolidBars (the add & norm and norm-comparison bar plots): the bars drawn where the data says, in their colour."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtGui

from attnlab.ui.plots.bars import SolidBars


def test_bars_cover_their_data_and_skip_non_finite_heights(qapp):
    bars = SolidBars("#3b7dd8", width=0.4)
    bars.set_bars(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.5, -0.5, np.nan, 2.0]))
    rect = bars.boundingRect()
    assert (rect.left(), rect.right(), rect.top(), rect.bottom()) == pytest.approx((-0.2, 3.2, -0.5, 2.0))
    assert bars.dataBounds(0) == pytest.approx((-0.2, 3.2)) and bars.dataBounds(1) == pytest.approx((-0.5, 2.0))
    assert len(bars._rects) == 3  # the NaN bar is left out
    x, heights = bars.bars()
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0, 3.0])
    assert np.isnan(heights[2])
    bars.set_bars(np.zeros(0), np.zeros(0))
    assert bars.boundingRect().isNull() and bars.dataBounds(1) is None


def test_bars_paint_in_their_colour_where_the_data_is(qtbot):
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(300, 200)
    plot.setBackground("w")
    bars = SolidBars("#ff9f1c", width=0.8)
    plot.addItem(bars)
    bars.set_bars(np.array([0.0, 1.0]), np.array([1.0, 0.0]))
    plot.setXRange(-0.5, 1.5, padding=0)
    plot.setYRange(0.0, 1.0, padding=0)
    plot.show()
    qtbot.waitExposed(plot)
    image = plot.grab().toImage()
    view = plot.getPlotItem().getViewBox()

    def pixel(x: float, y: float) -> str:
        point = plot.mapFromScene(view.mapViewToScene(pg.Point(x, y)))
        ratio = plot.devicePixelRatioF()
        return QtGui.QColor(image.pixel(int(point.x() * ratio), int(point.y() * ratio))).name()

    assert pixel(0.0, 0.5) == "#ff9f1c"  # inside the first bar
    assert pixel(1.0, 0.5) != "#ff9f1c"  # the second bar is zero high
    assert pixel(0.5, 0.5) != "#ff9f1c"  # between the bars


def test_horizontal_bars_run_along_x_from_zero(qapp):
    bars = SolidBars("#3b7dd8", width=0.5, horizontal=True)
    bars.set_bars(np.array([0.0, 1.0, 2.0]), np.array([3.0, -1.0, 0.5]))  # rows 0, 1, 2
    rect = bars.boundingRect()
    assert (rect.left(), rect.right(), rect.top(), rect.bottom()) == pytest.approx((-1.0, 3.0, -0.25, 2.25))
    # flat: pytest >= 9.2's approx compares flat sequences only
    edges = [v for r in bars._rects for v in (r.left(), r.width(), r.center().y())]
    assert edges == pytest.approx([0.0, 3.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.5, 2.0])
