"""One way round (CONTRIBUTING.md, "From a click to the repaint"): a toggle changes the options, the session
asks for a run, the worker returns the finished trace with its stage list, and every view (the schematic
included) draws from that trace. Nothing writes back into the control that was clicked."""

import functools

import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

from attnlab import session_jobs as session_module  # the worker's jobs (warm_up runs there)
from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.session import Session
from attnlab.ui.plots.schematic import Schematic
from attnlab.ui.window.main_window import MainWindow
from tests.support.tiny import build_tiny_model

WAIT = 15000
# CONTRIBUTING.md's path from the click to the repaint: (hop, the steps this test sees it take, in order); how far
# the click reaches (functions, files) is measured against a budget in test_click_budget.py
HOPS = (
    ("ui/controls/control_widgets.py: the generated row's connector -> Session.set_options", ["Session.set_options"]),
    ("session.py: Session.request_trace", ["Session.request_trace"]),
    ("engine/live.py: LiveModel.trace (worker)", ["LiveModel.trace"]),
    ("present/stages.py: warm_up (worker)", ["warm_up"]),
    ("session.py: Session._accept_trace", ["Session._accept_trace"]),
    ("ui/window/main_window.py: MainWindow._on_trace", ["MainWindow._on_trace", "Schematic.set_run"]),
    ("ui/window/main_window.py: MainWindow.refresh", ["MainWindow.refresh", "panel.show_stage", "panel painted"]),
    ("ui/plots/schematic.py: its repaint, queued behind the panel's", ["schematic painted"]),
)


class PaintLog(QObject):
    """Logs "panel painted" at the first paint of the panel (or of a widget inside it) after a show_stage, and
    "schematic painted" at the schematic's first paint after a Schematic.set_run."""

    def __init__(self, panel: QWidget, schematic: QWidget, log: list[str]):
        super().__init__()
        self.panel, self.schematic, self.log = panel, schematic, log

    def eventFilter(self, watched, event) -> bool:
        if event.type() != QEvent.Type.Paint or not isinstance(watched, QWidget):
            return False
        if watched is self.panel or self.panel.isAncestorOf(watched):
            self._once_after("panel.show_stage", "panel painted")
        elif watched is self.schematic:
            self._once_after("Schematic.set_run", "schematic painted")
        return False

    def _once_after(self, cause: str, step: str) -> None:
        if cause in self.log and step not in self.log[self.log.index(cause) :]:
            self.log.append(step)


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def _logged(log: list[str], name: str, call):
    @functools.wraps(call)
    def logged(*args, **kwargs):
        log.append(name)
        return call(*args, **kwargs)

    return logged


@pytest.fixture
def hops(monkeypatch):
    """The named steps, in the order they ran (installed before the window is made: its signals connect to
    the methods as they are then)."""
    log: list[str] = []
    for owner, name in (
        (Session, "update_options"),
        (Session, "set_options"),
        (Session, "request_trace"),
        (Session, "_accept_trace"),
        (LiveModel, "trace"),
        (MainWindow, "_on_trace"),
        (MainWindow, "refresh"),
        (Schematic, "set_run"),
    ):
        monkeypatch.setattr(owner, name, _logged(log, f"{owner.__name__}.{name}", getattr(owner, name)))
    monkeypatch.setattr(session_module, "warm_up", _logged(log, "warm_up", session_module.warm_up))
    return log


def test_a_toggle_goes_one_way_round_in_order(qtbot, open_window, hops):
    w = open_window(build_tiny_model("encoder-decoder", norm_first=False))
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    w.session.set_stage("enc.0.norm1")
    panel = w.current_panel()
    panel.show_stage = _logged(hops, "panel.show_stage", panel.show_stage)
    painted = PaintLog(panel, w.schematic, hops)
    QApplication.instance().installEventFilter(painted)
    combo = w.controls.norm
    clicked = combo.findData("pre")
    combo.setCurrentIndex(clicked)  # what the person's click does to the combo itself
    combo.setCurrentIndex = _logged(hops, "combo.setCurrentIndex", combo.setCurrentIndex)  # a write-back
    hops.clear()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        combo.activated.emit(clicked)
    qtbot.waitUntil(lambda: {"panel painted", "schematic painted"} <= set(hops), timeout=WAIT)
    QApplication.instance().removeEventFilter(painted)

    steps = [step for _hop, seen in HOPS for step in seen]
    # in this order, and nothing else named between them; the two repaints are queued one behind the other, and
    # on a loaded machine a panel that lays itself out again first (add & norm turning its rows) may paint second
    n = len(steps) - 2
    assert hops[:n] == steps[:n] and sorted(hops[n : n + 2]) == sorted(steps[n:]), hops
    assert "combo.setCurrentIndex" not in hops  # the combo that was clicked is never re-set
    trace = w.session.trace
    assert trace.options.norm_first and w.schematic.options is trace.options  # drawn from the finished trace
    assert combo.currentData() == "pre"


def test_the_other_controls_still_follow_a_change(qtbot, open_window):
    """The rows that depend on a change are re-read (the final-norm box follows the placement); a refused
    change snaps the clicked control back."""
    w = open_window(build_tiny_model("encoder-decoder", norm_first=False, final_norm=False))
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    final = w.controls.final_norm
    assert not final.isEnabled()  # post-norm without a trained final norm: nothing to switch
    combo = w.controls.norm
    clicked = combo.findData("pre")
    combo.setCurrentIndex(clicked)
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        combo.activated.emit(clicked)
    assert final.isEnabled()  # pre-norm: the parameter-free final norm may be added
    w.session.model.options_problems = lambda options: ["refused"]  # the next change cannot run
    heads = w.controls.heads
    before = heads.currentIndex()
    heads.setCurrentIndex((before + 1) % heads.count())
    heads.activated.emit(heads.currentIndex())
    assert heads.currentIndex() == before


def test_the_schematic_draws_a_wiring_once_and_nothing_while_hidden(qtbot, monkeypatch):
    """A wiring drawn lately is shown again from its kept picture (no layout, no drawing), the same pixels; a
    hidden schematic lays out nothing until it is shown, then draws the latest run."""
    config = build_tiny_model("encoder-decoder").config
    pre, post = (RunOptions(norm=norm).resolved(config) for norm in ("pre", "post"))
    work: list[str] = []
    monkeypatch.setattr(Schematic, "_lay_out", _logged(work, "lay out", Schematic._lay_out))
    monkeypatch.setattr(Schematic, "_draw", _logged(work, "draw", Schematic._draw))
    schematic = Schematic()
    qtbot.addWidget(schematic)
    schematic.resize(300, 430)
    schematic.show()
    schematic.set_run(config, pre)
    pre_image = schematic.grab().toImage()
    schematic.set_run(config, post)
    post_image = schematic.grab().toImage()
    assert pre_image != post_image and work.count("draw") == 2
    work.clear()
    schematic.set_run(config, pre)
    assert schematic.grab().toImage() == pre_image and work == []  # kept: neither laid out nor drawn again
    schematic.set_current("enc.0.ffn")  # a new highlight is a new drawing
    assert schematic.grab().toImage() != pre_image and work == ["lay out", "draw"]

    schematic.hide()
    work.clear()
    schematic.set_run(config, post)
    schematic.set_run(config, RunOptions(norm="post", residual=False).resolved(config))
    assert work == []
    schematic.show()
    assert work == ["lay out"] and schematic.texts[0][1] == "Post-norm: sub-layer → Add & Norm (no residual)"
