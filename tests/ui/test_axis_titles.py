"""No axis title is cut off (issue 32: the Q, K, V plots' y-axis title ran past the plot at 1024×768): the clip
check (attnlab/ui/window/clip_check.py) now measures axis titles too, and finds the old title's cut."""

from __future__ import annotations

import pyqtgraph as pg
import pytest

from attnlab.ui.window.clip_check import clipped_labels, shoot_stages
from attnlab.ui.window.main_window import MainWindow

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def presenting(qtbot, generating_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.set_presenting(True, full_screen=False)
    w.resize(1024, 768)
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.traceReady, timeout=15000):
        w.session.set_model(generating_model(), "the black cat sees the small dog", "le chat noir")
    yield w
    w.set_presenting(False)
    w.close()


def qkv_keys(w: MainWindow) -> list[str]:
    return [s.key for s in w.session.stages if s.kind == "qkv"][:2]  # an encoder and a decoder site


def test_the_qkv_axis_titles_fit_their_plots_at_1024x768(presenting):
    offenders = shoot_stages(presenting, qkv_keys(presenting))
    assert [line for line in offenders if "QLabel" not in line] == []  # labels beside the plots: other checks


def test_the_check_finds_an_axis_title_longer_than_its_plot(presenting):
    presenting.session.set_stage(qkv_keys(presenting)[0])
    shoot_stages(presenting, qkv_keys(presenting)[:1])
    panel = presenting.current_panel()
    axis = next(
        a
        for a in panel.findChildren(pg.GraphicsView)[0].scene().items()
        if isinstance(a, pg.AxisItem) and a.orientation == "left" and a.label.isVisible()
    )
    axis.setLabel("token (encoder tokens) " * 4)  # far longer than a plot of a few rows
    assert any("token (encoder tokens)" in line for line in clipped_labels(panel))
