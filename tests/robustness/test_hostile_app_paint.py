"""Paint never raises (issue 27): an exception inside any paint override attnlab owns is caught, logged once,
shown in the window's status bar, and the app keeps running and draws again once the cause is gone."""

import logging
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication, QGraphicsView

from attnlab.ui.plots.raster import MatrixImage
from attnlab.ui.plots.schematic import Schematic
from attnlab.ui.window import errors
from tests.support.tiny import build_tiny_model

pytestmark = pytest.mark.usefixtures("isolated_settings")


@pytest.fixture
def win(open_window):
    w = open_window(build_tiny_model())
    w.session.set_stage("enc.0.self.weights")  # a heatmap panel: MatrixImage items
    QApplication.processEvents()
    return w


def repaint_everything(w) -> None:
    """Draw the shown panel and the schematic now, then let queued reports reach the status bar."""
    w.current_panel().grab()
    w.schematic.grab()
    QApplication.processEvents()


def test_an_image_whose_render_raises_draws_nothing_and_the_status_bar_says_so(qtbot, win, monkeypatch, caplog):
    def broken_render(self):
        raise RuntimeError("render blew up")

    monkeypatch.setattr(errors, "_logged_paint_failures", set())
    monkeypatch.setattr(MatrixImage, "render", broken_render)
    assert shown_images(win)
    with caplog.at_level(logging.ERROR, logger="attnlab.ui.window.errors"):
        for _ in range(3):
            for image in shown_images(win):
                image._renderRequired = True  # the next paint renders again (and raises)
            repaint_everything(win)
    assert win.isVisible()
    assert win.errors.paint_failures >= 3
    message = win.statusBar().currentMessage()
    assert "Could not draw part of this view" in message and "render blew up" in message
    assert len([r for r in caplog.records if "MatrixImage" in r.getMessage()]) == 1  # logged once, not per frame
    assert win.errors.count == 0  # not the modal-ish error box: one status line

    monkeypatch.undo()  # the cause is gone: the next change draws the image again
    failures = win.errors.paint_failures
    with qtbot.waitSignal(win.session.traceReady, timeout=20000):
        win.session.set_src("dog bites man", debounce=False)
    repaint_everything(win)
    assert win.errors.paint_failures == failures
    assert all(i.qimage is not None for i in shown_images(win))


def shown_images(w) -> list[MatrixImage]:
    """The heatmap images of the shown panel."""
    views = w.current_panel().findChildren(QGraphicsView)
    return [item for view in views for item in view.scene().items() if isinstance(item, MatrixImage)]


def test_a_widget_paint_event_that_raises_is_reported_and_the_window_keeps_painting(qtbot, win, monkeypatch):
    def broken_transform(self):
        raise ZeroDivisionError("no room")

    monkeypatch.setattr(Schematic, "_transform", broken_transform)
    win.schematic.repaint()
    repaint_everything(win)
    assert win.isVisible()
    assert "ZeroDivisionError: no room" in win.statusBar().currentMessage()
    monkeypatch.undo()
    image = win.schematic.grab().toImage()  # a QPainter left open by the failure would make this fail
    assert image.width() > 0 and len({image.pixel(x, image.height() // 2) for x in range(image.width())}) > 1


def test_a_paint_guard_without_a_window_only_logs(qapp, caplog, monkeypatch):
    monkeypatch.setattr(errors, "_logged_paint_failures", set())

    class Item(MatrixImage):
        def render(self):
            raise ValueError("no data")

    item = Item(axisOrder="row-major")
    item.setImage(np.zeros((2, 2), np.float32), autoLevels=False, levels=(0.0, 1.0))
    target = QImage(4, 4, QImage.Format.Format_ARGB32)
    painter = QPainter(target)
    with caplog.at_level(logging.ERROR, logger="attnlab.ui.window.errors"):
        item.paint(painter, None, None)
        item.paint(painter, None, None)
    painter.end()
    assert [r.getMessage() for r in caplog.records] == ["drawing Item failed; it draws nothing until the next change"]
