"""Tests of the LabeledHeatmap / HeadGrid widgets and the colour-map helpers."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtCore, QtGui
from PySide6.QtCore import Qt

from attnlab.ui.plots import colormaps
from attnlab.ui.plots.head_grid import HeadGrid, grid_shape
from attnlab.ui.plots.heatmap import CategoryAxis, LabeledHeatmap, compute_levels, elide_label
from tests.support.tiny import shown_widget

WORDS = ["the", "black", "cat", "sees", "the", "dog", "."]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def heatmap(qtbot):
    w = shown_widget(qtbot, LabeledHeatmap(), 640, 520)
    return w


@pytest.fixture
def grid(qtbot):
    g = shown_widget(qtbot, HeadGrid(), 700, 600)
    return g


def settle(widget, qtbot) -> None:
    """Let layouts and pending resizes run, then force a full paint."""
    qtbot.wait(20)
    widget.grab()


def causal_softmax(t: int, heads: int = 1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((heads, t, t)).astype(np.float32)
    mask = np.triu(np.ones((t, t), bool), 1)
    scores[:, mask] = -np.inf
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w, mask


def drawn_tick_texts(axis: pg.AxisItem) -> list[str]:
    """The tick strings the axis would draw right now."""
    picture = QtGui.QPicture()
    painter = QtGui.QPainter(picture)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert specs is not None
    return [text for _rect, _flags, text in specs[2]]


def click_scene_pos(qtbot, graphics_view, scene_pos: QtCore.QPointF) -> None:
    pt = graphics_view.mapFromScene(scene_pos)
    qtbot.mouseClick(graphics_view.viewport(), Qt.MouseButton.LeftButton, pos=pt)


# --------------------------------------------------------------------------- colormaps


def test_colormaps_offered_and_loadable():
    for name in ("viridis", "magma", "inferno", "plasma", "cividis"):
        assert name in colormaps.COLORMAPS
    assert any(colormaps.is_diverging(n) for n in colormaps.COLORMAPS)
    for name in colormaps.COLORMAPS:
        cmap = colormaps.get_colormap(name)
        assert isinstance(cmap, pg.ColorMap)
        lut = cmap.getLookupTable(nPts=16)
        assert lut.shape[0] == 16


def test_colormap_fallback_is_safe():
    cmap = colormaps.get_colormap("no-such-map")
    assert isinstance(cmap, pg.ColorMap)
    expected = colormaps.get_colormap("viridis").getLookupTable(nPts=8)
    assert np.array_equal(cmap.getLookupTable(nPts=8), expected)
    assert isinstance(colormaps.get_colormap(None), pg.ColorMap)
    rdbu = colormaps.lookup_table("RdBu_r", 3)
    assert rdbu[0, 2] > rdbu[0, 0]  # negative end is blue
    assert rdbu[2, 0] > rdbu[2, 2]  # positive end is red


# ------------------------------------------------------------------------- pure helpers


def test_compute_levels_rules():
    pos = np.array([[0.2, 0.5], [0.9, 0.4]], np.float32)
    assert compute_levels(pos, None) == pytest.approx((0.2, 0.9))
    mixed = np.array([[-1.0, 3.0]], np.float32)
    assert compute_levels(mixed, None) == (-3.0, 3.0)  # both signs -> symmetric by default
    assert compute_levels(mixed, None, symmetric=False) == (-1.0, 3.0)
    assert compute_levels(pos, None, symmetric=True) == pytest.approx((-0.9, 0.9))
    assert compute_levels(pos, None, levels=(0, 1)) == (0.0, 1.0)
    const = np.full((2, 2), 0.5, np.float32)
    lo, hi = compute_levels(const, None)
    assert lo < 0.5 < hi


def test_elide_label():
    assert elide_label("cat") == "cat"
    long = "<extraordinarily_long>"
    short = elide_label(long)
    assert len(short) == 12 and short.endswith("…") and long.startswith(short[:-1])
    assert elide_label("a\nb") == "a\\nb"
    assert elide_label(" ") == "␣"


def test_elide_label_keeps_both_tokens_of_an_input_to_predicted_row():
    """A decoder row reads "input → predicted": a 13-character "petit → chien" was cut to "petit → chi…"."""
    assert elide_label("petit → chien") == "petit → chien"
    assert elide_label("<extraordinarily_long> → chien") == "<extraordin… → chien"
    assert elide_label("le → <extraordinarily_long>", 8) == "le → <extrao…"


def test_grid_shape():
    assert grid_shape(1) == (1, 1)
    assert grid_shape(4) == (2, 2)
    assert grid_shape(5) == (2, 3)
    assert grid_shape(8) == (3, 3)
    assert grid_shape(12) == (3, 4)


# ---------------------------------------------------------------------- LabeledHeatmap


def test_image_is_row_major_copy_of_matrix(heatmap, qtbot):
    m = np.arange(6, dtype=np.float64).reshape(2, 3) / 5.0
    heatmap.set_data(m, ["r0", "r1"], ["a", "b", "c"])
    settle(heatmap, qtbot)
    img = heatmap.image_item()
    assert img.axisOrder == "row-major"
    assert img.image.dtype == np.float32
    assert img.image.shape == (2, 3)
    np.testing.assert_array_equal(img.image, m.astype(np.float32))
    for r in range(2):
        for c in range(3):
            assert img.image[r, c] == np.float32(m[r, c])
    # Cell (r, c) covers c-0.5..c+0.5 horizontally and r-0.5..r+0.5 vertically.
    rect = img.mapRectToParent(img.boundingRect())
    assert (rect.left(), rect.top(), rect.width(), rect.height()) == (-0.5, -0.5, 3.0, 2.0)
    assert heatmap.view_box().yInverted()  # row 0 at the top
    # The rendered QImage has one pixel per cell, laid out as the matrix (x = column, y = row).
    q = img.qimage
    assert (q.width(), q.height()) == (3, 2)
    lut = colormaps.lookup_table(heatmap.colormap_name(), 256)
    lo, hi = heatmap.levels()
    for r in range(2):
        for c in range(3):
            idx = int(np.clip((m[r, c] - lo) / (hi - lo) * 256, 0, 255))
            got = q.pixelColor(c, r).getRgb()[:3]
            assert np.allclose(got, lut[idx, :3], atol=3), (r, c, got, lut[idx, :3])


def test_caller_array_is_copied(heatmap):
    m = np.zeros((3, 3), np.float32)
    heatmap.set_data(m, None, None)
    m[0, 0] = 99
    assert heatmap.image_item().image[0, 0] == 0


def test_levels_auto_and_symmetric(heatmap):
    bar = heatmap.colorbar()
    img = heatmap.image_item()

    heatmap.set_data(np.array([[0.1, 0.4], [0.2, 0.8]]), None, None)
    assert heatmap.levels() == pytest.approx((0.1, 0.8))
    assert tuple(img.levels) == pytest.approx((0.1, 0.8))
    assert bar.levels() == pytest.approx((0.1, 0.8))

    heatmap.set_data(np.array([[-1.0, 0.5], [2.0, 0.0]]), None, None)  # both signs
    assert heatmap.levels() == (-2.0, 2.0)
    assert tuple(img.levels) == pytest.approx((-2.0, 2.0))
    assert bar.levels() == pytest.approx((-2.0, 2.0))
    assert colormaps.is_diverging(heatmap.colormap_name())

    heatmap.set_data(np.array([[-1.0, 0.5], [2.0, 0.0]]), None, None, symmetric=False)
    assert heatmap.levels() == (-1.0, 2.0)

    heatmap.set_data(np.array([[0.1, 0.4]]), None, None, symmetric=True)
    assert heatmap.levels() == pytest.approx((-0.4, 0.4))

    heatmap.set_data(np.array([[0.1, 0.4]]), None, None, levels=(0.0, 1.0))
    assert heatmap.levels() == (0.0, 1.0)
    assert bar.levels() == (0.0, 1.0)
    assert heatmap.colormap_name() == colormaps.DEFAULT_SEQUENTIAL


def test_first_set_data_levels_reach_image(qtbot):
    w = LabeledHeatmap()
    qtbot.addWidget(w)
    w.set_data(np.array([[-2.0, 2.0]]), None, None)
    assert tuple(w.image_item().levels) == (-2.0, 2.0)


def test_set_colormap(heatmap):
    heatmap.set_data(np.array([[-1.0, 1.0]]), None, None)
    heatmap.set_colormap("magma")
    assert heatmap.colormap_name() == "magma"
    assert heatmap.colorbar().colorMap() is colormaps.get_colormap("magma")
    heatmap.set_colormap("viridis", signed="RdBu_r")
    assert heatmap.colormap_name() == "RdBu_r"  # data straddles 0
    heatmap.set_data(np.array([[0.0, 1.0]]), None, None)
    assert heatmap.colormap_name() == "viridis"
    heatmap.set_colormap("definitely-not-a-map")  # falls back, must not raise
    heatmap.set_data(np.array([[0.0, 1.0]]), None, None)


def test_ticks_show_labels(heatmap, qtbot):
    w, _ = causal_softmax(7)
    heatmap.set_data(w[0], WORDS, WORDS)
    settle(heatmap, qtbot)
    plot = heatmap.plot_item()
    left, bottom = plot.getAxis("left"), plot.getAxis("bottom")
    assert isinstance(left, CategoryAxis) and isinstance(bottom, CategoryAxis)
    assert left.mode == "labels"
    assert bottom.mode in ("labels", "rotated")
    assert drawn_tick_texts(left) == WORDS
    assert drawn_tick_texts(bottom) == WORDS
    assert bottom.tickValues(-0.5, 6.5, 400) == [(1.0, list(range(7)))]


def test_ticks_not_reset_when_labels_unchanged(heatmap, qtbot, monkeypatch):
    m = np.random.default_rng(0).random((7, 7))
    heatmap.set_data(m, WORDS, WORDS)
    settle(heatmap, qtbot)
    calls = {"set_labels": 0, "setTicks": 0}
    orig_set_labels = CategoryAxis.set_labels
    orig_set_ticks = pg.AxisItem.setTicks

    def spy_set_labels(self, *a, **k):
        calls["set_labels"] += 1
        return orig_set_labels(self, *a, **k)

    def spy_set_ticks(self, *a, **k):
        calls["setTicks"] += 1
        return orig_set_ticks(self, *a, **k)

    monkeypatch.setattr(CategoryAxis, "set_labels", spy_set_labels)
    monkeypatch.setattr(pg.AxisItem, "setTicks", spy_set_ticks)
    for i in range(5):
        heatmap.set_data(m * i, list(WORDS), tuple(WORDS))  # equal content, new objects
    assert calls == {"set_labels": 0, "setTicks": 0}

    heatmap.set_data(m, WORDS[::-1], WORDS)
    assert calls["set_labels"] == 1  # rows only
    assert calls["setTicks"] == 0
    settle(heatmap, qtbot)
    assert drawn_tick_texts(heatmap.plot_item().getAxis("left")) == WORDS[::-1]


def test_sparse_numeric_ticks_for_many_columns(heatmap, qtbot):
    rows = WORDS + ["x"] * 9
    m = np.random.default_rng(1).standard_normal((16, 512))
    heatmap.set_data(m, rows, [f"d{i}" for i in range(512)])
    settle(heatmap, qtbot)
    bottom = heatmap.plot_item().getAxis("bottom")
    assert bottom.mode == "numeric"
    texts = drawn_tick_texts(bottom)
    assert 2 <= len(texts) <= 30
    assert all(t.isdigit() for t in texts)
    assert "0" in texts
    values = [int(t) for t in texts]
    steps = set(np.diff(values).tolist())
    assert len(steps) == 1 and steps.pop() > 1


def test_left_axis_wide_enough_for_labels(heatmap, qtbot):
    labels = ["a", "<extraordinarily_long>", "c"]
    heatmap.set_data(np.eye(3), labels, None)
    settle(heatmap, qtbot)
    left = heatmap.plot_item().getAxis("left")
    fm = QtGui.QFontMetrics(left.style["tickFont"])
    assert left.width() >= fm.horizontalAdvance(elide_label(labels[1])) + 4
    assert left.style["tickFont"].pointSizeF() >= 10
    assert drawn_tick_texts(left)[1] == elide_label(labels[1])


def test_masked_cells(heatmap, qtbot):
    w, mask = causal_softmax(7)
    heatmap.set_data(w[0], WORDS, WORDS, masked=mask)
    settle(heatmap, qtbot)
    img = heatmap.image_item().image
    assert np.isnan(img[mask]).all()
    np.testing.assert_allclose(img[~mask], w[0][~mask])
    assert heatmap.is_masked(0, 6) and not heatmap.is_masked(6, 0)
    assert "masked" in heatmap.describe_cell(0, 6)
    assert "masked" not in heatmap.describe_cell(6, 0)
    lo, hi = heatmap.levels()
    assert math.isfinite(lo) and math.isfinite(hi)
    # NaN pixels render transparent; the hatched background behind them is shown.
    q = heatmap.image_item().qimage
    assert q.pixelColor(6, 0).alpha() == 0
    assert q.pixelColor(0, 6).alpha() == 255
    assert heatmap._mask_bg.isVisible()
    heatmap.set_data(w[0], WORDS, WORDS)
    assert not heatmap._mask_bg.isVisible()


def test_masked_value_explicitly_flagged_is_masked_even_if_finite(heatmap):
    m = np.array([[0.5, 0.7]], np.float32)
    heatmap.set_data(m, ["q"], ["a", "b"], masked=np.array([[False, True]]))
    assert heatmap.describe_cell(0, 1) == "row q (0) · column b (1) · value masked"
    assert heatmap.levels() == pytest.approx((0.25, 0.75))  # only the valid 0.5 counts


def test_neg_inf_additive_mask(heatmap, qtbot):
    scores = np.array([[1.0, -np.inf, -np.inf], [0.5, -2.0, -np.inf], [3.0, 0.0, -1.0]])
    heatmap.set_data(scores, ["a", "b", "c"], ["a", "b", "c"])
    settle(heatmap, qtbot)
    lo, hi = heatmap.levels()
    assert not (math.isnan(lo) or math.isnan(hi) or math.isinf(lo) or math.isinf(hi))
    assert (lo, hi) == (-3.0, 3.0)
    assert not np.isnan(heatmap.colorbar().levels()).any()
    img = heatmap.image_item().image
    assert np.isnan(img[0, 1]) and np.isnan(img[1, 2])
    assert img[2, 0] == 3.0
    assert "masked" in heatmap.describe_cell(0, 1)
    assert "inf" in heatmap.describe_cell(0, 1)


def test_all_masked_and_nan_do_not_break(heatmap, qtbot):
    heatmap.set_data(np.full((3, 4), -np.inf), None, None)
    assert heatmap.levels() == (0.0, 1.0)
    heatmap.set_data(np.full((3, 4), np.nan), None, None)
    assert heatmap.levels() == (0.0, 1.0)
    heatmap.set_data(np.ones((3, 4)), None, None, masked=np.ones((3, 4), bool))
    assert heatmap.levels() == (0.0, 1.0)
    settle(heatmap, qtbot)


def test_describe_cell_text(heatmap):
    m = np.array([[0.1, 0.2, 0.25], [0.3, 0.4, 0.5]])
    heatmap.set_data(m, ["the", "black"], ["cat", "sees", "dog"])
    assert heatmap.describe_cell(1, 2) == "row black (1) · column dog (2) · value 0.5"
    assert heatmap.describe_cell(0, 2) == "row the (0) · column dog (2) · value 0.25"
    assert heatmap.describe_cell(5, 0) == ""
    heatmap.set_value_format("{:.3f}")
    assert heatmap.describe_cell(0, 0) == "row the (0) · column cat (0) · value 0.100"
    heatmap.set_value_format(lambda v: f"{100 * v:.0f}%")
    assert heatmap.describe_cell(1, 1).endswith("value 40%")
    heatmap.set_data(m, None, None)  # the format persists across updates
    assert heatmap.describe_cell(1, 2) == "row 1 · column 2 · value 50%"
    heatmap.set_value_format("{:.4g}")
    assert heatmap.describe_cell(1, 2) == "row 1 · column 2 · value 0.5"


def test_describe_cell_uses_full_label(heatmap):
    long = "<extraordinarily_long>"
    heatmap.set_data(np.eye(2), [long, "b"], ["x", long])
    assert heatmap.describe_cell(0, 1) == f"row {long} (0) · column {long} (1) · value 0"


def test_hover_readout(heatmap, qtbot):
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    heatmap.set_data(m, ["a", "b", "c"], ["x", "y", "z"], masked=np.eye(3, dtype=bool))
    settle(heatmap, qtbot)
    with qtbot.waitSignal(heatmap.cellHovered) as blocker:
        heatmap._on_mouse_moved(heatmap.scene_pos_of_cell(2, 1))
    assert blocker.args == [2, 1]
    assert heatmap.readout_text() == "row c (2) · column y (1) · value 7"
    heatmap._on_mouse_moved(heatmap.scene_pos_of_cell(1, 1))
    assert heatmap.readout_text() == "row b (1) · column y (1) · value masked"
    # Over the left tick labels: the full row label.
    left = heatmap.plot_item().getAxis("left")
    y = heatmap.scene_pos_of_cell(1, 0).y()
    heatmap._on_mouse_moved(QtCore.QPointF(left.sceneBoundingRect().center().x(), y))
    assert heatmap.readout_text() == "row 1: b"


def test_hover_with_real_mouse(heatmap, qtbot):
    heatmap.set_data(np.eye(3), ["a", "b", "c"], ["x", "y", "z"])
    settle(heatmap, qtbot)
    view = heatmap.graphics_view()
    pt = view.mapFromScene(heatmap.scene_pos_of_cell(0, 2))
    qtbot.mouseMove(view.viewport(), pt)
    qtbot.waitUntil(lambda: heatmap.readout_text() == "row a (0) · column z (2) · value 0", timeout=2000)


def test_cell_clicked_signal(heatmap, qtbot):
    heatmap.set_data(np.random.default_rng(3).random((5, 6)), None, None)
    settle(heatmap, qtbot)
    for r, c in [(0, 0), (4, 5), (2, 3)]:
        pos = heatmap.scene_pos_of_cell(r, c)
        assert heatmap.cell_at_scene_pos(pos) == (r, c)
        # just inside the cell's corner still hits it
        corner = heatmap.view_box().mapViewToScene(QtCore.QPointF(c + 0.45, r - 0.45))
        assert heatmap.cell_at_scene_pos(corner) == (r, c)
        with qtbot.waitSignal(heatmap.cellClicked) as blocker:
            assert heatmap._handle_click(pos, Qt.MouseButton.LeftButton)
        assert blocker.args == [r, c]
    with qtbot.assertNotEmitted(heatmap.cellClicked):
        assert not heatmap._handle_click(heatmap.scene_pos_of_cell(1, 1), Qt.MouseButton.RightButton)
        assert not heatmap._handle_click(QtCore.QPointF(-1000, -1000), Qt.MouseButton.LeftButton)


def test_cell_clicked_with_real_mouse(heatmap, qtbot):
    heatmap.set_data(np.random.default_rng(4).random((4, 4)), list("abcd"), list("wxyz"))
    settle(heatmap, qtbot)
    with qtbot.waitSignal(heatmap.cellClicked, timeout=2000) as blocker:
        click_scene_pos(qtbot, heatmap.graphics_view(), heatmap.scene_pos_of_cell(3, 1))
    assert blocker.args == [3, 1]


def test_title_and_axis_titles(heatmap, qtbot):
    heatmap.set_axis_titles("query", "key")
    heatmap.set_data(np.eye(2), ["a", "b"], ["c", "d"], title="Attention weights")
    settle(heatmap, qtbot)
    assert heatmap.title() == "Attention weights"
    assert heatmap._title_label.isVisible()
    assert heatmap._title_label.font().pointSizeF() >= 10
    assert heatmap.plot_item().getAxis("left").labelText == "query"
    assert heatmap.plot_item().getAxis("bottom").labelText == "key"


def test_clear_shows_message(heatmap, qtbot):
    heatmap.set_data(np.eye(3), None, None)
    heatmap.clear("Not available for this model")
    settle(heatmap, qtbot)
    assert not heatmap.has_data()
    assert heatmap.message() == "Not available for this model"
    assert heatmap._message.isVisible() and not heatmap.graphics_view().isVisible()
    assert heatmap.describe_cell(0, 0) == ""
    with qtbot.assertNotEmitted(heatmap.cellClicked):
        heatmap._handle_click(heatmap.scene_pos_of_cell(0, 0), Qt.MouseButton.LeftButton)
    heatmap.set_data(np.eye(3), None, None)
    settle(heatmap, qtbot)
    assert heatmap.has_data() and heatmap.graphics_view().isVisible()
    assert heatmap.message() == ""


def test_bad_input_raises(heatmap):
    with pytest.raises(ValueError):
        heatmap.set_data(np.zeros(5), None, None)
    with pytest.raises(ValueError):
        heatmap.set_data(np.zeros((2, 3)), ["a"], None)
    with pytest.raises(ValueError):
        heatmap.set_data(np.zeros((2, 3)), None, None, masked=np.zeros((3, 2), bool))


def test_large_matrix(heatmap, qtbot):
    m = np.random.default_rng(5).standard_normal((512, 2048)).astype(np.float32)
    heatmap.set_data(m, None, None)
    settle(heatmap, qtbot)
    assert heatmap.image_item().image.shape == (512, 2048)
    assert heatmap.plot_item().getAxis("left").mode == "numeric"
    assert heatmap.plot_item().getAxis("bottom").mode == "numeric"


def test_heatmap_soak(heatmap, qtbot):
    rng = np.random.default_rng(6)
    shapes = [(7, 7), (16, 512), (64, 64), (1, 1), (3, 40)]
    for i in range(300):
        rows, cols = shapes[(i // 25) % len(shapes)]
        m = rng.standard_normal((rows, cols)).astype(np.float32)
        masked = None
        if i % 3 == 0:
            masked = np.triu(np.ones((rows, cols), bool), 1)
        if i % 7 == 0:
            m[0, -1] = -np.inf
        labels = [f"t{j}" for j in range(rows)] if i % 2 else None
        heatmap.set_data(
            m, labels, [f"c{j}" for j in range(cols)], title=f"step {i}", masked=masked, symmetric=(i % 5 == 0) or None
        )
        if i % 50 == 10:
            heatmap.clear("cleared")
        heatmap._on_mouse_moved(heatmap.scene_pos_of_cell(0, 0))
        heatmap.grab()
    assert heatmap.has_data()


# ---------------------------------------------------------------------------- HeadGrid


def test_head_grid_creates_h_plots(grid, qtbot):
    w, mask = causal_softmax(7, heads=4)
    grid.set_heads(w, WORDS, WORDS, mask, "layer 0")
    settle(grid, qtbot)
    assert grid.head_count() == 4
    assert len(grid.view_boxes()) == 4 and len(grid.image_items()) == 4
    assert grid.title() == "layer 0"
    for h, img in enumerate(grid.image_items()):
        assert img.axisOrder == "row-major"
        expected = np.where(mask, np.nan, w[h])
        np.testing.assert_array_equal(img.image, expected.astype(np.float32))
    # 2 x 2 layout: views of heads 0 and 1 share a row, 0 and 2 share a column.
    r = [vb.sceneBoundingRect() for vb in grid.view_boxes()]
    assert r[0].top() == pytest.approx(r[1].top()) and r[0].left() == pytest.approx(r[2].left())
    assert r[2].top() > r[0].bottom() - 1
    titles = [lab.text for lab in grid._head_titles]
    assert titles == [f"head {h + 1}" for h in range(4)]  # people count heads from 1
    # one scene for everything
    assert all(vb.scene() is grid.graphics_view().scene() for vb in grid.view_boxes())


def test_head_grid_rebuilds_only_when_h_changes(grid, qtbot):
    w4, mask = causal_softmax(7, heads=4)
    grid.set_heads(w4, WORDS, WORDS, mask, "")
    views = grid.view_boxes()
    n0 = grid.rebuild_count
    for seed in range(3):
        w, _ = causal_softmax(7, heads=4, seed=seed)
        grid.set_heads(w, WORDS, WORDS, mask, "")
    w5, mask5 = causal_softmax(5, heads=4)
    grid.set_heads(w5, WORDS[:5], WORDS[:5], mask5, "")  # same H, new T
    assert grid.rebuild_count == n0
    assert grid.view_boxes() == views
    w8, _ = causal_softmax(7, heads=8)
    grid.set_heads(w8, WORDS, WORDS, mask, "")
    settle(grid, qtbot)
    assert grid.rebuild_count == n0 + 1
    assert grid.head_count() == 8 and len(grid.view_boxes()) == 8
    lefts = {round(vb.sceneBoundingRect().left()) for vb in grid.view_boxes()}
    assert len(lefts) == 3  # ceil(sqrt(8)) columns


def test_head_grid_keeps_the_grid_of_each_head_count(grid, qtbot):
    w4, mask = causal_softmax(7, heads=4)
    grid.set_heads(w4, WORDS, WORDS, mask, "")
    views4 = grid.view_boxes()
    w8, _ = causal_softmax(7, heads=8)
    grid.set_heads(w8, WORDS, WORDS, mask, "")
    grid.set_selected(6)
    n0 = grid.rebuild_count
    w4b, mask5 = causal_softmax(5, heads=4, seed=3)
    grid.set_heads(w4b, WORDS[:5], WORDS[:5], mask5, "")  # back to 4 heads, new tokens: no rebuild
    settle(grid, qtbot)
    assert grid.rebuild_count == n0 and grid.view_boxes() == views4
    assert grid.head_count() == 4 and grid.graphics_view().isVisible()
    for h, img in enumerate(grid.image_items()):
        np.testing.assert_array_equal(img.image, np.where(mask5, np.nan, w4b[h]).astype(np.float32))
    assert grid.selected() is None  # head 6 does not exist with 4 heads
    grid.set_selected(2)
    assert grid.describe_cell(2, 4, 0).startswith("head 3: ")
    assert grid.head_at_scene_pos(grid.scene_pos_of_head(2)) == 2


def test_head_grid_shares_levels(grid):
    w, mask = causal_softmax(6, heads=3)
    grid.set_heads(w, None, None, mask, "")
    assert grid.levels() == (0.0, 1.0)
    for img in grid.image_items():
        assert tuple(img.levels) == (0.0, 1.0)
    assert grid.colorbar().levels() == (0.0, 1.0)
    grid.set_heads(w * 4 - 2, None, None, None, "", levels=(-3.0, 5.0))
    for img in grid.image_items():
        assert tuple(img.levels) == (-3.0, 5.0)
    assert grid.colorbar().levels() == (-3.0, 5.0)
    scores = np.random.default_rng(0).standard_normal((3, 6, 6)).astype(np.float32)
    scores[1, 0, 5] = -np.inf
    grid.set_heads(scores, None, None, None, "")
    lo, hi = grid.levels()
    assert math.isfinite(lo) and lo == -hi
    assert len({tuple(img.levels) for img in grid.image_items()}) == 1


def test_head_grid_head_clicked(grid, qtbot):
    w, mask = causal_softmax(7, heads=4)
    grid.set_heads(w, WORDS, WORDS, mask, "")
    settle(grid, qtbot)
    for h in range(4):
        with qtbot.waitSignal(grid.headClicked) as blocker:
            assert grid._handle_click(grid.scene_pos_of_head(h), Qt.MouseButton.LeftButton)
        assert blocker.args == [h]
    with qtbot.waitSignal(grid.headClicked, timeout=2000) as blocker:
        click_scene_pos(qtbot, grid.graphics_view(), grid.scene_pos_of_head(3))
    assert blocker.args == [3]
    # the head title is clickable too
    title_pos = grid._head_titles[2].sceneBoundingRect().center()
    with qtbot.waitSignal(grid.headClicked) as blocker:
        grid._handle_click(title_pos, Qt.MouseButton.LeftButton)
    assert blocker.args == [2]


def test_head_grid_selection_and_readout(grid, qtbot):
    w, mask = causal_softmax(7, heads=4)
    grid.set_heads(w, WORDS, WORDS, mask, "")
    grid.set_selected(1)
    assert grid.selected() == 1
    assert grid.view_boxes()[1].border.style() != Qt.PenStyle.NoPen
    assert grid.view_boxes()[0].border.style() == Qt.PenStyle.NoPen
    grid.set_selected(None)
    assert grid.view_boxes()[1].border.style() == Qt.PenStyle.NoPen
    grid.set_selected(2)
    grid.set_heads(w[:2], WORDS, WORDS, mask, "")  # selected head no longer exists
    assert grid.selected() is None
    settle(grid, qtbot)
    vb = grid.view_boxes()[1]
    grid._on_mouse_moved(vb.mapViewToScene(QtCore.QPointF(1, 3)))
    assert grid.readout_text() == f"head 2: query sees (3) · key black (1) · weight {w[1, 3, 1]:.3f}"
    assert grid.describe_cell(0, 0, 6) == "head 1: query the (0) · key . (6) · weight masked"


def test_head_grid_clear(grid, qtbot):
    w, mask = causal_softmax(4, heads=2)
    grid.set_heads(w, None, None, mask, "")
    grid.clear("No cross-attention in this model")
    settle(grid, qtbot)
    assert not grid.has_data() and grid.message() == "No cross-attention in this model"
    with qtbot.assertNotEmitted(grid.headClicked):
        grid._handle_click(grid.scene_pos_of_head(0), Qt.MouseButton.LeftButton)
    grid.set_heads(w, None, None, mask, "")
    assert grid.has_data() and grid.message() == ""


def test_head_grid_small_hides_tick_text(qtbot):
    g = shown_widget(qtbot, HeadGrid(), 300, 260)
    w, mask = causal_softmax(7, heads=16)
    g.set_heads(w, WORDS, WORDS, mask, "")
    settle(g, qtbot)
    assert all(ax.mode == "none" for ax in g._left_axes + g._bottom_axes)


def test_head_grid_soak(grid, qtbot):
    rng = np.random.default_rng(7)
    for i in range(120):
        h = (1, 4, 6, 8, 12)[(i // 10) % 5]
        t = (7, 12, 3)[i % 3]
        w = rng.random((h, t, t)).astype(np.float32)
        mask = np.triu(np.ones((t, t), bool), 1) if i % 2 else None
        labels = [f"w{j}" for j in range(t)]
        grid.set_heads(w, labels, labels, mask, f"step {i}")
        grid.set_selected(i % h)
        if i % 40 == 39:
            grid.clear("gone")
        grid.grab()
    assert grid.head_count() in (1, 4, 6, 8, 12)
