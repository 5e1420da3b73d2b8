"""Long attention maps in the app (issue 23 item 7): a 2,000-token map is drawn as an overview no larger than
the pixels it has, its axes stay token positions, zooming in draws the exact cells, the hover readout gives the
exact value of the (query, key) under the mouse, a mask click at a zoomed position names the right cell, and
the heads grid and the model view read small tiles. References: the full map read the ordinary way
(`trace.read(name, head)`) and numpy's maximum.reduceat over the tiles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present.model_grid import site_grids
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.views.attention import map_view
from attnlab.present.views.long_map import LONG_SIDE
from attnlab.ui.plots.long_map_view import DETAIL_SIDE
from attnlab.ui.plots.model_view import ModelView
from attnlab.ui.stages.attention import AttentionMapPanel, MaskPanel
from attnlab.ui.stages.heads import HeadsPanel
from tests.support.tiny import build_tiny_model

T = 2000
SITE = "dec.1.self"


@pytest.fixture(scope="module")
def long_run():
    model = build_tiny_model("decoder-only", seed=7, max_len=T + 8)
    ids = torch.randint(4, model.config.tgt_vocab_size, (T - 1,), generator=torch.Generator().manual_seed(2))
    ids = [int(i) for i in ids]
    return model, ids, model.trace("", ids, RunOptions())


def stage(trace, key):
    return next(s for s in stages_for(trace) if s.key == key)


def max_pool(full: np.ndarray, s_r: int, s_c: int) -> np.ndarray:
    work = np.where(np.isnan(full), -np.inf, full)
    rows = np.maximum.reduceat(work, np.arange(0, full.shape[0], s_r), axis=0)
    return np.maximum.reduceat(rows, np.arange(0, full.shape[1], s_c), axis=1)


def shown_panel(qtbot, cls, trace, key, head=0):
    panel = cls()
    qtbot.addWidget(panel)
    panel.resize(700, 560)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_stage(trace, stage(trace, key), ViewState(head=head))
    loading = panel.loading if isinstance(panel, HeadsPanel) else panel._map.loading
    if loading():  # a map not read before is read off the GUI thread, then drawn
        qtbot.waitUntil(lambda: not loading(), timeout=60_000)
    qtbot.wait(10)
    return panel


def zoom_to(qtbot, heatmap, r0, c0, n):
    heatmap.view_box().setRange(xRange=(c0 - 0.5, c0 + n - 0.5), yRange=(r0 - 0.5, r0 + n - 0.5), padding=0.0)
    heatmap.detail().refresh()


def test_view_model_carries_a_source_and_an_overview(long_run):
    _model, _ids, trace = long_run
    name = names.site_entry(SITE, "weights")
    shown = map_view(trace, stage(trace, name), ViewState(head=2))
    source = shown.matrix.source
    assert source is not None and source.shape == (T, T) and source.head == 2
    s = math.ceil(T / LONG_SIDE)
    assert shown.matrix.matrix.shape == (math.ceil(T / s), math.ceil(T / s))
    np.testing.assert_array_equal(shown.matrix.matrix, max_pool(trace.read(name, 2).numpy(), s, s))
    assert len(shown.matrix.rows) == T  # labels per token, not per tile


def test_overview_is_no_larger_than_the_view_and_is_the_max_pool(qtbot, long_run):
    _model, _ids, trace = long_run
    name = names.site_entry(SITE, "weights")
    first = AttentionMapPanel()
    qtbot.addWidget(first)
    first.show_stage(trace, stage(trace, names.site_entry("dec.0.self", "weights")), ViewState(head=1))
    assert first._map.loading()  # not read before: blank tiles first, the map read off the GUI thread
    assert np.isnan(first._map.image_item().image).all()
    panel = shown_panel(qtbot, AttentionMapPanel, trace, name, head=1)
    heatmap = panel._map
    assert not np.isnan(heatmap.image_item().image).all() and panel.shown_data()["matrix"] is heatmap._raw
    image = heatmap.image_item().image
    vb = heatmap.view_box()
    assert heatmap.source() is not None and heatmap.shape() == (T, T)
    assert image.shape[0] <= max(64, math.ceil(vb.height())) and image.shape[1] <= max(64, math.ceil(vb.width()))
    piece = heatmap.detail().overview
    full = trace.read(name, 1).numpy()
    np.testing.assert_array_equal(piece.values, max_pool(full, piece.row_step, piece.col_step))
    # the axes are token positions: the whole map is in view and the image covers it
    (x0, x1), (y0, y1) = vb.viewRange()
    assert (x0, x1, y0, y1) == pytest.approx((-0.5, T - 0.5, -0.5, T - 0.5))
    covered = heatmap.image_item().mapRectToParent(heatmap.image_item().boundingRect())
    assert covered.left() == pytest.approx(-0.5) and covered.width() >= T
    assert heatmap._left.mode != "labels"  # 2,000 rows in a few hundred pixels: position numbers


def test_zoomed_in_window_shows_the_exact_values_with_labels(qtbot, long_run):
    _model, _ids, trace = long_run
    name = names.site_entry(SITE, "weights")
    panel = shown_panel(qtbot, AttentionMapPanel, trace, name, head=3)
    heatmap = panel._map
    detail = heatmap.detail()
    full = trace.read(name, 3).numpy()
    zoom_to(qtbot, heatmap, 1500, 1480, 64)
    window = detail.window
    assert window is not None and detail.image.isVisible()
    r0, c0 = window.row0, window.col0
    rows, cols = window.values.shape
    assert r0 <= 1500 and 1564 <= r0 + rows and c0 <= 1480 and 1544 <= c0 + cols and rows <= DETAIL_SIDE
    np.testing.assert_array_equal(window.values, full[r0 : r0 + rows, c0 : c0 + cols])
    blocked = np.isneginf(trace.numpy(names.site_entry(SITE, "mask")))[r0 : r0 + rows, c0 : c0 + cols]
    np.testing.assert_array_equal(window.masked, blocked)  # the causal triangle crosses this window
    drawn = detail.image.image
    np.testing.assert_array_equal(np.isnan(drawn), blocked)
    np.testing.assert_array_equal(drawn[~blocked], full[r0 : r0 + rows, c0 : c0 + cols][~blocked])
    pos = detail.image.mapToParent(detail.image.boundingRect().topLeft())
    assert (pos.x(), pos.y()) == pytest.approx((c0 - 0.5, r0 - 0.5))
    zoom_to(qtbot, heatmap, 1500, 1400, 8)
    assert heatmap._left.mode == "labels"  # 8 rows: each has room for its token
    zoom_to(qtbot, heatmap, 0, 0, T)
    assert not detail.image.isVisible()  # zoomed out: the overview alone


def test_hover_reads_the_exact_value_at_any_zoom(qtbot, long_run):
    _model, _ids, trace = long_run
    name = names.site_entry(SITE, "weights")
    panel = shown_panel(qtbot, AttentionMapPanel, trace, name, head=0)
    heatmap = panel._map
    full = trace.read(name, 0).numpy()
    piece = heatmap.detail().overview
    # a cell that is not the max of its tile: the readout must not be the overview's value
    q, k = 1777, 1001
    assert full[q, k] != piece.values[q // piece.row_step, k // piece.col_step]
    for zoomed in (False, True):
        if zoomed:
            zoom_to(qtbot, heatmap, q - 20, k - 30, 64)
        pos = heatmap.scene_pos_of_cell(q, k)
        assert heatmap.cell_at_scene_pos(pos) == (q, k)
        heatmap._on_mouse_moved(pos)
        text = heatmap.readout_text()  # the attention panel's readout names the weight
        assert text.startswith("decoder query ") and f"({q})" in text
        assert text.endswith(f"({k}) · weight {full[q, k]:.4g}")


def test_mask_click_at_a_zoomed_position_toggles_that_cell(qtbot, long_run):
    model, ids, trace = long_run
    panel = shown_panel(qtbot, MaskPanel, trace, names.site_entry(SITE, "mask"))
    heatmap = panel._map
    assert heatmap.source() is not None
    q, k = 1234, 567
    zoom_to(qtbot, heatmap, q - 10, k - 40, 48)
    clicked = []
    panel.maskCellToggled.connect(lambda site, a, b: clicked.append((site, a, b)))
    view = heatmap.graphics_view()
    point = view.mapFromScene(heatmap.scene_pos_of_cell(q, k))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    assert clicked == [(SITE, q, k)]
    options = RunOptions().toggled_mask_cell(*clicked[0])  # what Session.toggle_mask_cell sets
    before = np.isneginf(trace.numpy(names.site_entry(SITE, "mask")))
    after = np.isneginf(model.trace("", ids, options).numpy(names.site_entry(SITE, "mask")))
    assert not before[q, k] and after[q, k]
    assert int((after != before).sum()) == 1


def test_heads_grid_reads_small_tiles_and_exact_cells(qtbot, long_run):
    _model, _ids, trace = long_run
    panel = shown_panel(qtbot, HeadsPanel, trace, f"{SITE}.heads")
    grid = panel._grid
    qtbot.waitUntil(lambda: not panel.loading(), timeout=60_000)  # heads not read before: off the GUI thread
    assert "Reading" not in grid.readout_text()
    name = names.site_entry(SITE, "weights")
    steps = panel.shown_data()["weights"].shape
    assert steps[0] == trace.n_heads and max(steps[1:]) <= 256
    for h, img in enumerate(grid.image_items()):
        assert max(img.image.shape) <= 256
        s = math.ceil(T / img.image.shape[0])
        if h == 2:  # the max of each tile; hatched (NaN) exactly where every cell of the tile is blocked
            expected = max_pool(trace.read(name, h).numpy(), s, s)
            blocked = np.isneginf(trace.numpy(names.site_entry(SITE, "mask")))
            every = ~max_pool(~blocked, s, s).astype(bool)
            assert every.any()
            np.testing.assert_array_equal(np.isnan(img.image), every)
            np.testing.assert_array_equal(img.image[~every], expected[~every])
    full = trace.read(name, 2).numpy()
    assert grid.describe_cell(2, 1500, 20).endswith(f"(20) · weight {full[1500, 20]:.3f}")
    pos = grid.view_boxes()[2].mapViewToScene(grid.view_boxes()[2].mapSceneToView(grid.scene_pos_of_head(2)))
    head, q, k = grid.cell_at_scene_pos(pos)
    assert head == 2 and abs(q - T / 2) < 30 and abs(k - T / 2) < 30  # the centre of the head is mid-map


def test_model_view_reads_thumbnails(qtbot, long_run):
    _model, _ids, trace = long_run
    grids = site_grids(trace)
    grid = grids["dec.self"]
    assert grid.rows <= 64 and grid.cols <= 64 and grid.row_step * grid.rows >= T
    full = trace.read(names.site_entry("dec.1.self", "weights"), 3).numpy()
    s = grid.row_step
    expected = max_pool(full, s, s)
    got = grid.image[
        grid.row_of(1, 0) : grid.row_of(1, 0) + grid.rows, grid.col_of(3, 0) : grid.col_of(3, 0) + grid.cols
    ]
    np.testing.assert_array_equal(np.nan_to_num(got, nan=-np.inf), expected)
    assert grid.locate(grid.row_of(1, 5 * s) + 0.5, grid.col_of(3, 7 * s) + 0.5) == (1, 3, 5 * s, 7 * s)
    view = ModelView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    view.set_trace(trace)
    assert view.loading()  # the thumbnails are read off the GUI thread and fill in
    qtbot.waitUntil(lambda: not view.loading(), timeout=60_000)
    shown = view.shown_data()["dec.self"]
    n_layers, n_heads = len(grid.sites), grid.heads
    assert shown.shape == (n_layers * (grid.rows + 1) - 1, n_heads * (grid.cols + 1) - 1)
    np.testing.assert_array_equal(shown, grid.image)  # NaN in the same places (gaps, wholly blocked tiles)
    assert "Reading" not in view._readout.text()


def test_token_lines_say_why_instead_of_reading_the_map(long_run):
    from attnlab.present.views.lines import lines_view
    from attnlab.present.views.model import MessageView

    _model, _ids, trace = long_run
    shown = lines_view(trace, stage(trace, f"{SITE}.lines"), ViewState())
    assert isinstance(shown, MessageView) and f"{T:,} queries" in shown.message
