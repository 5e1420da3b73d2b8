"""The app's start-up fallback (issue 38.3): a model named on the command line that cannot be opened is replaced by
the bundled one once; when the bundled model is refused too (`ATTNLAB_MEMORY_LIMIT=300000000 attnlab` gave 2,496
dialogs in 40 s: each failure scheduled the next load), the failure is said once and the window stays empty and
usable (File → Open… opens a model)."""

from __future__ import annotations

import argparse

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

import attnlab.checkpoints as checkpoints
from attnlab.checkpoints import save_checkpoint
from attnlab.commands import app as app_command
from attnlab.engine.tokenizer_process import encode_timeout, set_encode_timeout
from attnlab.ui.window import app as appsettings
from attnlab.ui.window.main_window import MainWindow

pytestmark = pytest.mark.usefixtures("isolated_settings")
LOOP_MS = 2500  # the event loop runs this long: the old loop opened dozens of dialogs a second


def app_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    app_command.add_arguments(parser)
    return parser.parse_args(list(argv))


class Started:
    """What `attnlab …` did in the LOOP_MS its event loop ran: the window, the dialogs, the bundled loads."""

    def __init__(self) -> None:
        self.window: MainWindow | None = None
        self.dialogs: list[str] = []
        self.bundled_loads = 0


@pytest.fixture
def start(qtbot, monkeypatch):
    """start(*argv) runs the app command's `run` with an event loop of LOOP_MS instead of `app.exec()`."""
    started = Started()
    real_bundled = checkpoints.load_bundled

    def counted_bundled(*a, **k):
        started.bundled_loads += 1
        return real_bundled(*a, **k)

    class LoopFor:
        def exec(self) -> int:
            qtbot.wait(LOOP_MS)
            started.window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
            return 0

        def exit(self, code: int = 0) -> None:
            pass

    monkeypatch.setattr(appsettings, "create_app", lambda _argv=None: LoopFor())
    monkeypatch.setattr(checkpoints, "load_bundled", counted_bundled)
    monkeypatch.setattr(QMessageBox, "warning", lambda _parent, title, text, *a: started.dialogs.append(text))
    timeout = encode_timeout()

    def run(*argv: str) -> Started:
        assert app_command.run(app_args(*argv)) == 0
        assert started.window is not None
        qtbot.addWidget(started.window)
        return started

    yield run
    set_encode_timeout(timeout)
    if started.window is not None:
        started.window.errors.uninstall()
        started.window.session.shutdown()


def test_a_refused_bundled_model_is_said_once_and_the_window_stays_usable(
    start, monkeypatch, qtbot, tmp_path, tiny_model
):
    monkeypatch.setenv("ATTNLAB_MEMORY_LIMIT", "1")  # no weights fit: the bundled model is refused like a big one
    started = start()
    w = started.window
    assert started.bundled_loads == 1 and len(started.dialogs) == 1, started.dialogs
    assert "ATTNLAB_MEMORY_LIMIT" in started.dialogs[0] or "memory" in started.dialogs[0]
    assert w.errors.history == [] and w.session.model is None and not w.session.loading
    assert "File → Open" in w.placeholder.text()
    monkeypatch.delenv("ATTNLAB_MEMORY_LIMIT")
    path = save_checkpoint(tiny_model("encoder-decoder"), tmp_path / "tiny.safetensors")
    with qtbot.waitSignal(w.session.traceReady, timeout=30000):
        w.open_checkpoint(str(path))  # File → Open… in the empty window
    assert w.session.model is not None and started.bundled_loads == 1


def test_a_refused_checkpoint_falls_back_once_and_a_refused_fallback_ends_there(start, monkeypatch, tmp_path):
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"not a safetensors file")
    monkeypatch.setenv("ATTNLAB_MEMORY_LIMIT", "1")  # the bundled model cannot be opened either
    started = start(str(broken))
    assert started.bundled_loads == 1, started.bundled_loads
    assert len(started.dialogs) == 2 and "broken.safetensors" in started.dialogs[0], started.dialogs
    assert started.window.session.model is None and "File → Open" in started.window.placeholder.text()
