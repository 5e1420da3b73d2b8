"""No clipped labels in presentation mode at 1024×768 (the check benchmarks/classroom_shots.py runs on every
main stage and both themes), and the check itself finds a label that runs off its view."""

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from attnlab.ui.window.clip_check import clipped_labels, main_stage_keys, shoot_stages
from attnlab.ui.window.main_window import MainWindow

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def test_the_check_finds_a_label_off_the_view_and_a_squeezed_label(qtbot):
    box = QWidget()
    qtbot.addWidget(box)
    plot = pg.PlotWidget()
    plot.setXRange(0, 1, padding=0)
    text = pg.TextItem("a long value label 96.0%", anchor=(0.0, 0.5))
    plot.addItem(text)
    text.setPos(0.95, 0.5)
    squeezed = QLabel("a label that needs much more room than it has")
    squeezed.setMaximumWidth(60)
    layout = QVBoxLayout(box)
    layout.addWidget(plot)
    layout.addWidget(squeezed)
    box.resize(400, 300)
    box.show()
    qtbot.waitExposed(box)
    qtbot.wait(20)
    found = clipped_labels(box)
    assert any("96.0%" in line and "outside the view" in line for line in found)
    assert any("a label that needs" in line for line in found)
    text.setPos(0.05, 0.5)
    squeezed.setMaximumWidth(10_000)
    qtbot.wait(20)
    assert clipped_labels(box) == []


@pytest.mark.parametrize("dark", [False, True])
def test_presentation_mode_at_1024x768_clips_no_label(qtbot, generating_model, tmp_path, dark):
    w = MainWindow()
    qtbot.addWidget(w)
    w.set_dark(dark)
    w.show()
    w.set_presenting(True, full_screen=False)
    w.resize(1024, 768)
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.traceReady, timeout=15000):
        w.session.set_model(generating_model(), "the black cat sees the small dog", "le chat noir")
    keys = main_stage_keys(w.session.stages)
    assert {"src.tokens", "out.probs"} <= set(keys) and any(k.endswith(".lines") for k in keys)
    chosen = [k for k in keys if k.endswith((".weights", ".heads", ".lines", "out.probs"))]
    assert shoot_stages(w, chosen, tmp_path, "t-") == []
    assert len(list(tmp_path.glob("t-*.png"))) == len(chosen)
    w.set_presenting(False)
    w.set_dark(False)
    w.close()


def test_the_check_finds_an_output_value_label_off_the_view(qtbot):
    from attnlab.ui.plots.value_labels import ValueLabel, ValueLabels

    box = QWidget()
    qtbot.addWidget(box)
    plot = pg.PlotWidget()
    plot.setXRange(0, 1, padding=0)
    plot.setYRange(-1, 1, padding=0)
    for axis in ("left", "bottom"):  # their end ticks are not what this test is about
        plot.hideAxis(axis)
    labels = ValueLabels(QLabel().font(), "#000000")
    plot.addItem(labels)
    QVBoxLayout(box).addWidget(plot)
    box.resize(400, 300)
    box.show()
    qtbot.waitExposed(box)
    labels.set_labels([ValueLabel(0.97, 0.0, " 96.0%", inside=False)])  # starts at the right edge: cut off
    qtbot.wait(20)
    assert any("96.0%" in line and "outside the view" in line for line in clipped_labels(box))
    labels.set_labels([ValueLabel(0.97, 0.0, "96.0% ", inside=True)])  # ends there, on its bar: fits
    qtbot.wait(20)
    assert clipped_labels(box) == []
