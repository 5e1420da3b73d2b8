"""The whole-model attention view: its tiled images hold exactly each site's weights, clicking a cell opens
that head's weights stage, and it redraws for a new head count."""

import numpy as np
import pytest
from PySide6.QtCore import Qt

from attnlab.present.model_grid import GAP, site_grids, tile
from attnlab.ui.window.main_window import MainWindow

WAIT = 15000


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def test_tile_places_every_cell_and_leaves_nan_gaps():
    weights = np.random.default_rng(0).random((3, 2, 4, 5)).astype(np.float32)  # [L, H, Tq, Tk]
    image = tile(weights)
    assert image.shape == (3 * (4 + GAP) - GAP, 2 * (5 + GAP) - GAP)
    for layer in range(3):
        for head in range(2):
            r, c = layer * (4 + GAP), head * (5 + GAP)
            np.testing.assert_array_equal(image[r : r + 4, c : c + 5], weights[layer, head])
    assert np.isnan(image[4, :]).all() and np.isnan(image[:, 5]).all()


def test_site_grids_cover_every_site_kind(tiny_model):
    trace = tiny_model().trace("the black cat sees the dog", "le chat noir")
    grids = site_grids(trace)
    assert list(grids) == ["enc.self", "dec.self", "dec.cross"]
    cross = grids["dec.cross"]
    assert cross.sites == ("dec.0.cross", "dec.1.cross") and cross.heads == 4
    layer, head, q, k = 1, 3, 2, 5
    assert cross.locate(cross.row_of(layer, q) + 0.5, cross.col_of(head, k) + 0.5) == (layer, head, q, k)
    assert cross.image[cross.row_of(layer, q), cross.col_of(head, k)] == trace["dec.1.cross.weights"][head, q, k]
    assert cross.locate(cross.rows + 0.5, 0.5) is None  # the gap row


def test_dock_draws_when_shown_and_a_click_opens_the_head(qtbot, tiny_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_model(tiny_model(), "the black cat sees the dog", "le chat")
    dock = w.findChild(type(w.nav_dock), "modelViewDock")
    assert not dock.isVisible() and dock.view is None  # hidden: nothing made, nothing drawn
    w.findChild(type(w.dark_action), "modelViewAction").trigger()
    qtbot.waitUntil(lambda: dock.view is not None and dock.view.draw_count == 1, timeout=WAIT)
    shown = dock.view.shown_data()
    np.testing.assert_array_equal(shown["enc.self"], site_grids(w.session.trace)["enc.self"].image)
    view = dock.view._scene
    pos = view.mapFromScene(dock.view.scene_pos_of("dec.cross", 1, 2))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert w.session.stage_key == "dec.1.cross.weights" and w.session.view.head == 2
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.update_options(n_heads=8)
    qtbot.waitUntil(lambda: dock.view.draw_count == 2, timeout=WAIT)
    assert dock.view._grids["enc.self"].heads == 8
    w.session.shutdown()
