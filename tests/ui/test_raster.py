"""The opaque-colour and pre-coloured image helpers of attnlab/ui/plots/raster.py, checked against pyqtgraph's own
ImageItem colouring and against plain alpha arithmetic."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtGui

from attnlab.ui.plots import colormaps
from attnlab.ui.plots.raster import MatrixImage, opaque_over, opaque_pen, qt_ready
from tests.support.tiny import shown_widget


def premultiplied_pixels(image: QtGui.QImage) -> np.ndarray:
    """The image as premultiplied 0xAARRGGBB words, uint32 [rows, cols] (a copy)."""
    converted = image.convertToFormat(QtGui.QImage.Format.Format_ARGB32_Premultiplied)
    rows, cols, stride = converted.height(), converted.width(), converted.bytesPerLine() // 4
    words = np.frombuffer(converted.constBits(), dtype=np.uint32, count=rows * stride)
    return words.reshape(rows, stride)[:, :cols].copy()


def rendered(item: pg.ImageItem, values: np.ndarray, levels: tuple[float, float], lut: np.ndarray) -> QtGui.QImage:
    item.setLookupTable(lut)
    item.setImage(values, autoLevels=False, levels=levels)
    item.render()
    return item.qimage


def awkward_values(seed: int) -> np.ndarray:
    """[12, 37] float32: normal values, a few far outside any level range, NaN, +inf and -inf."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(12, 37)).astype(np.float32) * 2.0
    values[0, :5] = [np.nan, np.inf, -np.inf, 1e30, -1e30]
    values[rng.random(values.shape) < 0.05] = np.nan
    return values


@pytest.mark.parametrize("cmap", ["viridis", "CET-D1", "RdBu_r"])
@pytest.mark.parametrize("levels", [(-2.0, 2.0), (0.0, 1.0), (-0.3, 3.7), (1.5, 1.5)])
@pytest.mark.parametrize("alpha", [True, False])
def test_matrix_image_colours_every_cell_as_pyqtgraph_does(qapp, cmap, levels, alpha):
    lut = colormaps.get_colormap(cmap).getLookupTable(nPts=256, alpha=alpha)  # uint8 [256, 4 | 3]
    values = awkward_values(seed=len(cmap))
    ours = rendered(MatrixImage(axisOrder="row-major"), values, levels, lut)
    theirs = rendered(pg.ImageItem(axisOrder="row-major"), values, levels, lut)
    assert ours.format() == QtGui.QImage.Format.Format_ARGB32_Premultiplied  # the format drawn without converting
    np.testing.assert_array_equal(premultiplied_pixels(ours), premultiplied_pixels(theirs))
    assert (premultiplied_pixels(ours)[np.isnan(values)] == 0).all()  # NaN cells are transparent


def test_matrix_image_follows_a_new_colour_table_and_new_data(qapp):
    item = MatrixImage(axisOrder="row-major")
    values = awkward_values(seed=3)
    first = premultiplied_pixels(rendered(item, values, (-1.0, 1.0), colormaps.lookup_table("viridis")))
    other_map = premultiplied_pixels(rendered(item, values, (-1.0, 1.0), colormaps.lookup_table("magma")))
    assert not np.array_equal(first, other_map)
    other_data = premultiplied_pixels(rendered(item, -values, (-1.0, 1.0), colormaps.lookup_table("viridis")))
    assert not np.array_equal(first, other_data)
    again = premultiplied_pixels(rendered(item, values, (-1.0, 1.0), colormaps.lookup_table("viridis")))
    np.testing.assert_array_equal(first, again)


def test_matrix_image_leaves_rgb_data_to_pyqtgraph(qapp):
    rgb = np.random.default_rng(0).integers(0, 255, size=(5, 6, 3), dtype=np.uint8)
    ours, theirs = MatrixImage(axisOrder="row-major"), pg.ImageItem(axisOrder="row-major")
    for item in (ours, theirs):
        item.setImage(rgb, autoLevels=False, levels=(0, 255))
        item.render()
    np.testing.assert_array_equal(premultiplied_pixels(ours.qimage), premultiplied_pixels(theirs.qimage))


def test_opaque_over_mixes_by_alpha():
    white, black = QtGui.QColor(255, 255, 255), QtGui.QColor(0, 0, 0)
    half_red = QtGui.QColor(255, 0, 0, 128)
    mixed = opaque_over(half_red, white)
    assert mixed.alpha() == 255
    assert mixed.red() == 255 and abs(mixed.green() - 127) <= 1 and abs(mixed.blue() - 127) <= 1
    on_black = opaque_over(half_red, black)
    assert abs(on_black.red() - 128) <= 1 and on_black.green() == 0 and on_black.blue() == 0
    solid = QtGui.QColor(12, 34, 56)
    assert opaque_over(solid, white).getRgb() == solid.getRgb()


def test_opaque_pen_keeps_width_and_cosmetic_and_drops_alpha():
    pen = pg.mkPen(QtGui.QColor(0, 0, 255, 64), width=3.5)
    flat = opaque_pen(pen, QtGui.QColor(255, 255, 255))
    assert flat.color().alpha() == 255 and flat.widthF() == 3.5 and flat.isCosmetic() == pen.isCosmetic()
    assert flat.color().blue() == 255 and 180 <= flat.color().red() <= 200  # 75% white over blue
    assert pen.color().alpha() == 64  # the original is left alone


# ----------------------------------------------------------------------------- the lean colour-bar ticks


def both_specs(axis: pg.AxisItem) -> tuple[tuple, tuple]:
    """(the lean specs the axis uses, pyqtgraph's own) for the axis as it stands."""
    picture = QtGui.QPicture()
    painter = QtGui.QPainter(picture)
    try:
        ours = axis.generateDrawSpecs(painter)
        theirs = pg.AxisItem.generateDrawSpecs(axis, painter)
    finally:
        painter.end()
    assert ours is not None and theirs is not None
    return ours, theirs


def shown_heatmap(qtbot, size: tuple[int, int]):
    """A LabeledHeatmap of `size` on screen."""
    from attnlab.ui.plots.heatmap import LabeledHeatmap

    heatmap = shown_widget(qtbot, LabeledHeatmap(), *size)
    return heatmap


@pytest.mark.parametrize("size", [(420, 330), (300, 160), (900, 700)])
@pytest.mark.parametrize("scale", [1.0, 0.013, 47.0, -3.0])
def test_colour_bar_ticks_match_pyqtgraph(qtbot, size, scale):
    heatmap = shown_heatmap(qtbot, size)
    values = np.random.default_rng(1).normal(size=(9, 20)).astype(np.float32) * scale
    heatmap.set_data(values, symmetric=scale < 0)
    qtbot.wait(10)
    heatmap.grab()
    axis = heatmap._bar.axis
    ours, theirs = both_specs(axis)
    assert ours[0][0] == theirs[0][0] and ours[0][1:] == theirs[0][1:]  # the axis line
    assert len(ours[1]) == len(theirs[1])
    for (pen, a, b), (their_pen, their_a, their_b) in zip(ours[1], theirs[1], strict=True):
        assert pen.color().rgba() == their_pen.color().rgba()
        assert (a.x(), a.y(), b.x(), b.y()) == pytest.approx((their_a.x(), their_a.y(), their_b.x(), their_b.y()))
    assert [text for _r, _f, text in ours[2]] == [text for _r, _f, text in theirs[2]]
    assert len(ours[2]) >= 2  # the bar is labelled
    for (rect, flags, _t), (their_rect, their_flags, _tt) in zip(ours[2], theirs[2], strict=True):
        assert flags == int(their_flags)
        assert abs(rect.center().y() - their_rect.center().y()) < 1.0
        assert abs(rect.left() - their_rect.left()) < 1.0 and abs(rect.width() - their_rect.width()) < 1.0


def test_colour_bar_ticks_come_back_from_the_cache_only_for_the_same_bar(qtbot):
    heatmap = shown_heatmap(qtbot, (420, 330))
    values = np.random.default_rng(2).normal(size=(9, 20)).astype(np.float32)
    heatmap.set_data(values, symmetric=True)
    heatmap.grab()
    axis = heatmap._bar.axis
    first, theirs = both_specs(axis)
    again, _ = both_specs(axis)
    assert again is first  # the same levels and rectangle: the kept result
    heatmap.set_data(values * 3.0, symmetric=True)  # other levels: computed afresh, and right
    heatmap.grab()
    wider, theirs_wider = both_specs(axis)
    assert wider is not first
    assert [t for _r, _f, t in wider[2]] == [t for _r, _f, t in theirs_wider[2]] != [t for _r, _f, t in first[2]]
    heatmap.set_data(values, symmetric=True)  # back to the first levels: kept
    heatmap.grab()
    assert both_specs(axis)[0] is first
    font = QtGui.QFont(axis.style["tickFont"])
    font.setPointSizeF(font.pointSizeF() * 2)
    axis.setTickFont(font)  # another font: computed afresh
    bigger, theirs_bigger = both_specs(axis)
    assert bigger is not first
    assert [r.height() for r, _f, _t in bigger[2]] == pytest.approx(
        [r.height() for r, _f, _t in theirs_bigger[2]], abs=1.0
    )


def test_images_are_handed_to_qt_row_major_float32_whatever_their_layout(qapp):
    """A column-major or strided float64 matrix (the concat of 128 one-wide heads was one) colours the same as
    its row-major float32 copy; QImage never sees a strided buffer (issue 27: it raised inside paint)."""
    lut = colormaps.lookup_table("viridis")
    values = awkward_values(seed=5)  # [12, 37] float32, C order
    expected = premultiplied_pixels(rendered(MatrixImage(axisOrder="row-major"), values, (-2.0, 2.0), lut))
    layouts = {
        "column-major": np.asfortranarray(values),
        "float64 column-major": np.asfortranarray(values.astype(np.float64)),
        "every other column": np.repeat(values, 2, axis=1)[:, ::2],
    }
    for label, strided in layouts.items():
        assert not strided.flags.c_contiguous or strided.dtype != np.float32, label
        item = MatrixImage(axisOrder="row-major")
        pixels = premultiplied_pixels(rendered(item, strided, (-2.0, 2.0), lut))
        np.testing.assert_array_equal(pixels, expected, err_msg=label)
        assert item.image.flags.c_contiguous and item.image.dtype == np.float32, label
    ready = qt_ready(values)
    assert ready is values  # already fine: no copy
