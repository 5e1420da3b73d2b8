"""Colour scales for any length (issue 32): at 2,000 tokens a head's weights map, drawn, shows its structure. The
measure: the standard deviation of the drawn map's luminance (0 … 255), over the image's pixels as grabbed from
the screen; the floor, LUMA_STD_FLOOR, is what a map whose colours span a fair part of viridis gives. The same map
drawn on the old 0 … 1 scale falls below it (it is uniformly dark), so the test can fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6 import QtGui

from attnlab.engine.options import RunOptions
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.weight_scale import MIN_KEYS, weight_scale
from attnlab.ui.stages.attention import AttentionMapPanel
from attnlab.ui.stages.heads import HeadsPanel
from tests.support.tiny import build_tiny_model

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
T = 2000
LUMA_STD_FLOOR = 12.0  # luminance levels: a uniformly dark map is near 0-5, a structured one tens


@pytest.fixture(scope="module")
def long_encoder():
    """An encoder's self-attention over 2,000 tokens: no causal mask, so every weight is near 1/2,000."""
    model = build_tiny_model("encoder-only", seed=3, max_len=T + 8)
    ids = torch.randint(4, model.config.src_vocab_size, (T - 2,), generator=torch.Generator().manual_seed(5))
    return model.trace([int(i) for i in ids], None, RunOptions())


def stage(trace, kind):
    return next(s for s in stages_for(trace) if s.kind == kind and s.key.startswith("enc.0."))


def luma_std(view, image) -> float:
    """The std of the luminance of the image's pixels as drawn in `view` (a grab of the widget)."""
    view.scene().prepareForPaint()
    rect = view.viewportTransform().mapRect(image.mapRectToScene(image.boundingRect())).toRect()
    grabbed = view.viewport().grab(rect).toImage().convertToFormat(QtGui.QImage.Format.Format_RGB888)
    width, height = grabbed.width(), grabbed.height()
    rgb = np.frombuffer(grabbed.constBits(), np.uint8).reshape(height, grabbed.bytesPerLine())[:, : 3 * width]
    rgb = rgb.reshape(height, width, 3).astype(float)
    assert width > 100 and height > 100  # the map was found and drawn
    return float((rgb @ np.array([0.2126, 0.7152, 0.0722])).std())


def shown(qtbot, cls, trace, kind):
    panel = cls()
    qtbot.addWidget(panel)
    panel.resize(700, 600)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_stage(trace, stage(trace, kind), ViewState(head=0))
    loading = panel.loading if isinstance(panel, HeadsPanel) else panel._map.loading
    if loading():
        qtbot.waitUntil(lambda: not loading(), timeout=60_000)
    qtbot.wait(20)
    return panel


def test_the_rule_keeps_short_maps_on_0_to_1_and_names_a_percentile_scale():
    rng = np.random.default_rng(0)
    short = rng.dirichlet(np.ones(8), size=8)  # [8, 8] rows summing to 1
    assert weight_scale(short, 8) == ((0.0, 1.0), "")
    long = rng.dirichlet(np.ones(T), size=50)  # [50, 2000]: every weight near 1/2000
    (low, high), label = weight_scale(long, T)
    # the percentile of a sample of 65,536 weights spread over the map: within a few % of numpy's over all
    assert low == 0.0 and high == pytest.approx(np.percentile(long, 99.5), rel=0.03) and high < 0.01
    assert "99.5th pct" in label and label.startswith("0 – ")
    assert weight_scale(long, MIN_KEYS - 1)[0] == (0.0, 1.0)


def test_a_2000_token_map_shows_its_structure(qtbot, long_encoder):
    panel = shown(qtbot, AttentionMapPanel, long_encoder, "weights")
    heatmap = panel._map
    view, image = heatmap.graphics_view(), heatmap.image_item()
    low, high = heatmap.levels()
    assert high < 0.05  # a percentile scale was chosen (the largest weights here are ~0.002)
    assert "pct" in heatmap.colorbar().getAxis("left").labelText
    now = luma_std(view, image)
    assert now >= LUMA_STD_FLOOR
    old = image.image
    image.setImage(old, autoLevels=False, levels=(0.0, 1.0))  # the same tiles on the old 0 … 1 scale
    assert luma_std(view, image) < LUMA_STD_FLOOR


def test_the_heads_grid_of_2000_tokens_shows_structure_on_one_scale(qtbot, long_encoder):
    panel = shown(qtbot, HeadsPanel, long_encoder, "heads")
    grid = panel._grid
    assert grid.levels()[1] < 0.05 and "pct" in grid.colorbar().getAxis("left").labelText
    view = grid.graphics_view() if hasattr(grid, "graphics_view") else grid._glw
    stds = [luma_std(view, image) for image in grid.image_items()]
    assert min(stds) >= LUMA_STD_FLOOR, stds
    for image in grid.image_items():
        image.setImage(image.image, autoLevels=False, levels=(0.0, 1.0))
    old = [luma_std(view, image) for image in grid.image_items()]
    # on 0 … 1 heads go uniformly dark (a head with one strong column of maxima may still pass)
    assert sum(before < LUMA_STD_FLOOR for before in old) >= len(old) // 2, old


def test_a_map_drawn_whole_with_many_keys_gets_the_same_scale():
    """300 tokens: drawn whole (below long_map.LONG_SIDE), its weights as small as a long map's; the single map
    and the heads grid take weight_scale's percentile scale and name it, like the long map."""
    from attnlab.present.views.attention import map_view
    from attnlab.present.views.heads import heads_view

    model = build_tiny_model("encoder-only", seed=3, max_len=320)
    ids = torch.randint(4, model.config.src_vocab_size, (298,), generator=torch.Generator().manual_seed(5))
    trace = model.trace([int(i) for i in ids], None, RunOptions())
    weights = trace.numpy("enc.0.self.weights")  # [H, T, T]
    single = map_view(trace, stage(trace, "weights"), ViewState(head=1))
    assert single.matrix.source is None  # drawn whole, not as a long map
    top = float(np.percentile(weights[1], 99.5))
    assert single.matrix.levels == pytest.approx((0.0, top), rel=0.03) and "99.5th pct" in single.matrix.scale_label
    grid = heads_view(trace, stage(trace, "heads"), ViewState())
    assert grid.levels == pytest.approx((0.0, float(np.percentile(weights, 99.5))), rel=0.03) and grid.scale_label
