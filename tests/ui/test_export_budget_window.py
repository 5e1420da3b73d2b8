"""File → Export counted before it starts (issue 38): with no room, each format of the window's export is
refused in one line (the message the dialog shows) and writes nothing; the window keeps its run."""

from __future__ import annotations

from collections import namedtuple

import pytest

from attnlab.engine import output_budget
from attnlab.engine.memory import RunTooBig
from attnlab.ui.window.export_actions import export_current
from attnlab.ui.window.main_window import MainWindow

Usage = namedtuple("Usage", "total used free")


def test_every_export_format_is_refused_in_one_line_when_nothing_fits(qtbot, tmp_path, tiny_model, monkeypatch):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.session.traceReady, timeout=15000):
        w.session.set_model(tiny_model(), "the black cat sees the dog", "le chat")
    w.session.set_stage("enc.0.self.weights")
    monkeypatch.setattr(output_budget, "memory_room", lambda: 100)
    monkeypatch.setattr(output_budget.shutil, "disk_usage", lambda _folder: Usage(10**9, 10**9 - 100, 100))
    for fmt in ("png", "csv", "npz"):
        with pytest.raises(RunTooBig) as refused:
            export_current(w, fmt, tmp_path / f"a.{fmt}", 2)
        (line,) = str(refused.value).splitlines()
        assert "but only 100 bytes" in line, fmt
    assert not list(tmp_path.iterdir()) and w.session.trace is not None
    w.session.shutdown()
