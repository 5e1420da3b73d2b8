"""View → Head roles…: the window shows present/head_roles.py's numbers for the window's run, a click on a map
cell opens that head's weights stage, and the sink what-if draws its run."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.present import head_roles
from tests.support.tiny import build_tiny_model

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def test_the_window_shows_the_roles_and_opens_a_head(qtbot, open_window):
    from PySide6.QtGui import QAction

    window = open_window(build_tiny_model("decoder-only"))
    window.findChild(QAction, "headRolesAction").trigger()
    from attnlab.ui.window.head_roles_view import HeadRolesWindow

    roles = window.findChild(HeadRolesWindow)
    assert roles is not None and roles.isVisible()
    qtbot.waitUntil(lambda: "roles" in roles.shown_numbers(), timeout=20000)
    trace = window.session.trace
    expected = head_roles.head_roles(window.session.model, trace)
    roles.stat.setCurrentIndex(1)  # the sink mass
    np.testing.assert_allclose(roles.shown_numbers()["roles"], expected.maps[1].matrix, atol=1e-6)
    roles.roles_map.cellClicked.emit(1, 2)  # decoder layer 1, head 2
    qtbot.waitUntil(lambda: window.session.stage is not None and window.session.stage.key == "dec.1.self.weights")
    assert window.session.view.head == 2

    roles.tabs.setCurrentIndex(2)
    roles.head.setValue(3)
    roles.query.setValue(4)
    roles.key.setValue(1)
    site = roles.dims_site.currentData()
    products = roles.shown_numbers()["dims"]
    score = float(trace[f"{site}.scores"][3, 4, 1])
    assert abs(float(products.sum()) - score) <= 1e-5

    roles.tabs.setCurrentIndex(1)
    np.testing.assert_array_equal(
        roles.shown_numbers()["sink"], head_roles.sink_page(trace, roles.sink_site.currentData()).column.matrix
    )
    roles.what_if.click()
    qtbot.waitUntil(lambda: "Run without" in roles.sink_note.text(), timeout=20000)
