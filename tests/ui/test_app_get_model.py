"""File → Get a model…: the dialog downloads from a stand-in Hub on 127.0.0.1 (tests/support/stand_in_hub.py) off
the GUI thread with a progress bar, then the window opens the snapshot; Cancel leaves nothing in the cache; a refusal
is one line in the dialog."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import threading

import huggingface_hub
import pytest
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QProgressBar

from attnlab.ui.window.get_model import STEPS, GetModelDialog
from tests.commands.test_get import tiny_repo, untouched
from tests.support.stand_in_hub import StandInHub, StandInRepo
from tests.support.tiny import build_tiny_model as tiny_model

WAIT = 15000
pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with StandInHub() as hub:
        hub.repos["acme/tiny"] = tiny_repo(tmp_path)
        # loopback only: huggingface_hub fetches its agent-harness registry from its default endpoint by itself
        # (utils/_detect_agent.py, best effort); keep that off the network
        monkeypatch.setattr(huggingface_hub.utils._detect_agent, "_fetch_registry", lambda: None)
        yield hub


def test_get_a_model_downloads_off_the_gui_thread_and_the_window_opens_it(
    qtbot, open_window, hub, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    win = open_window(tiny_model())
    action = win.findChild(QAction, "getModelAction")
    assert action is not None and action.text() == "&Get a model…"
    action.trigger()
    dialog = win.findChild(GetModelDialog)
    assert dialog is not None and dialog.isVisible()
    steps: list[int] = []
    dialog.findChild(QProgressBar, "getModelProgress").valueChanged.connect(steps.append)
    dialog.model_id.setText("acme/tiny")
    gui = threading.get_ident()
    with qtbot.waitSignal(dialog.got, timeout=WAIT) as got, qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        dialog.download_button.click()
        assert dialog.worker is not None and dialog.worker.ident != gui  # the download is on a worker thread
    snapshot = got.args[0]
    assert snapshot.startswith(str(tmp_path / "cache" / "models--acme--tiny" / "snapshots"))
    assert steps and steps[-1] == STEPS
    qtbot.waitUntil(lambda: not win.session.busy, timeout=WAIT)
    assert win.session.model.config.arch == "decoder-only" and win.session.model_path == snapshot


def test_cancel_stops_the_download_and_leaves_nothing(qtbot, hub, tmp_path):
    hub.repos["acme/tiny"].delay = 0.5  # each file waits half a second: Cancel comes first
    cache = tmp_path / "cache"
    dialog = GetModelDialog(cache_dir=cache, endpoint=hub.url)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.model_id.setText("acme/tiny")
    dialog.download_button.click()
    worker = dialog.worker
    qtbot.waitUntil(lambda: dialog.status.text().startswith("Downloading"), timeout=WAIT)
    dialog.cancel_button.click()
    assert not dialog.isVisible()
    worker.join(timeout=WAIT / 1000)
    assert not worker.is_alive()
    untouched(cache)


def test_a_refusal_is_one_line_in_the_dialog_and_it_stays_open(qtbot, hub, tmp_path):
    hub.repos["acme/pickled"] = StandInRepo({"config.json": b"{}", "pytorch_model.bin": b"\x80\x04."})
    dialog = GetModelDialog(cache_dir=tmp_path / "cache", endpoint=hub.url)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.model_id.setText("not an id")
    dialog.download_button.click()
    assert "is not a model id" in dialog.status.text() and dialog.worker is None
    dialog.model_id.setText("acme/pickled")
    dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.worker is None and dialog.model_id.isEnabled(), timeout=WAIT)
    assert "only as PyTorch pickles" in dialog.status.text() and "\n" not in dialog.status.text()
    assert dialog.isVisible() and dialog.download_button.isEnabled()
    untouched(tmp_path / "cache")
