"""`attnlab --stage NAME` shows NAME (issue 32): for every stage name the bundled translation model has, a window
started the way the command starts it (MainWindow.start with the stage) shows that stage once its first trace
is drawn, and keeps showing it; and the command itself, with a fresh settings file and with --present, lands on
the stages the issue found it leaving."""

from __future__ import annotations

import argparse
import time

import pytest
from PySide6.QtWidgets import QApplication

import attnlab.checkpoints as checkpoints
from attnlab.checkpoints import load_bundled
from attnlab.commands import app as app_command
from attnlab.present.stages import stage_keys_for_config
from attnlab.ui.stages import panel_class_for
from attnlab.ui.window.main_window import MainWindow

WAIT = 60000
SENTENCE, DECODER = "the black cat sees the dog", "le chat noir voit"

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


def settle(seconds: float) -> None:
    """Let the event loop run a while, as the window does in the seconds after its start."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.01)


def shows(window: MainWindow, key: str) -> bool:
    stage = window.session.stage
    return (
        stage is not None
        and window.session.stage_key == key
        and window.navigator.current_key() == key
        and f"({key})" in window.stage_title.text()
        and type(window.current_panel()) is panel_class_for(stage.kind)
    )


def test_every_stage_name_of_the_translation_model_is_where_the_window_starts(qtbot, translation):
    keys = stage_keys_for_config(translation.config)  # what `--stage` accepts (checked before loading)
    window = MainWindow()  # not shown: what it shows is its state (stage, list, title, panel), not its paint
    qtbot.addWidget(window)
    try:
        for key in keys:
            with qtbot.waitSignal(window.session.traceReady, timeout=WAIT):
                window.start(lambda: translation, src=SENTENCE, tgt=DECODER, stage=key)
                window._run_pending_start()  # the first paint came long ago (start waits for one)
            QApplication.processEvents()
            assert shows(window, key), (key, window.session.stage_key)
        assert keys == [s.key for s in window.session.stages]  # the names known before loading are the run's
    finally:
        window.errors.uninstall()
        window.session.shutdown()
        window.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["--stage", "enc.0.self.scores"],
        ["--stage", "enc.0.self.weights", "--present"],
        ["--stage", "dec.0.cross.weights"],
    ],
)
def test_the_app_command_lands_on_its_stage_and_stays(qtbot, monkeypatch, translation, argv):
    """The command's own path (a fresh settings file: tests/conftest.py isolated_settings), a few seconds
    after the first trace."""
    monkeypatch.setattr(checkpoints, "load_bundled", lambda name="translation": translation)
    seen: dict[str, object] = {}

    def fake_exec() -> int:
        w = next(x for x in QApplication.topLevelWidgets() if isinstance(x, MainWindow) and x.isVisible())
        qtbot.waitUntil(lambda: w.session.trace is not None, timeout=WAIT)
        settle(2.0)
        seen.update(key=w.session.stage_key, shown=shows(w, argv[1]), presenting=w.presenting)
        w.set_presenting(False)
        w.close()
        w.deleteLater()
        return 0

    monkeypatch.setattr(QApplication, "exec", lambda self: fake_exec())
    parser = argparse.ArgumentParser()
    app_command.add_arguments(parser)
    assert app_command.run(parser.parse_args(argv)) == 0
    assert seen["key"] == argv[1] and seen["shown"] and seen["presenting"] == ("--present" in argv)
