"""Shared test fixtures: the Qt platform (set once, before anything imports Qt) and the tiny random models.

Every test that needs a small live model takes the `tiny_model` fixture, a builder:

    def test_something(tiny_model):
        model = tiny_model("decoder-only", seed=3, n_heads=2)

The builder's defaults (d_model 32, 4 heads, 2+2 layers, max_len 32, a word tokenizer trained on TEXTS) are
the one tiny model of the suite; keyword arguments change any ModelConfig field. Modules import it (and
`assert_same_trace`, `shown_widget`, the window's sentence) from the helpers' module:
`from tests.support.tiny import build_tiny_model`.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any test module imports PySide6

import pytest

from tests.support.tiny import WINDOW_SRC, WINDOW_TGT, WINDOW_WAIT_MS, build_tiny_model


@pytest.fixture(scope="session")
def tiny_model():
    """The builder above (session-scoped, so module-scoped fixtures can use it too)."""
    return build_tiny_model


@pytest.fixture(scope="session")
def generating_model():
    """The builder with `never_ends=True`: a model whose Generate always appends a token."""
    return functools.partial(build_tiny_model, never_ends=True)


@pytest.fixture
def isolated_settings(tmp_path, monkeypatch):
    """Never touch the person's own settings: the app's QSettings and ATTNLAB_SETTINGS point into the test's
    tmp_path. Qt-using modules ask for it with `pytestmark = pytest.mark.usefixtures("isolated_settings")`."""
    from PySide6.QtCore import QSettings  # imported here: the Qt-free tests never load Qt through conftest

    monkeypatch.setenv("ATTNLAB_SETTINGS", str(tmp_path / "settings.ini"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path))


@pytest.fixture
def open_window(qtbot):
    """open_window(model=None, size=None): a shown MainWindow (settings isolated by the caller's module), with
    `model` traced on WINDOW_SRC / WINDOW_TGT when given; every window opened is shut down after the test."""
    from attnlab.ui.window.main_window import MainWindow  # here: the Qt-free tests never load Qt through conftest

    opened = []

    def open_(model=None, size: tuple[int, int] | None = None):
        w = MainWindow()
        qtbot.addWidget(w)
        opened.append(w)
        if size is not None:
            w.resize(*size)
        w.show()
        qtbot.waitExposed(w)
        if model is not None:
            with qtbot.waitSignal(w.session.traceReady, timeout=WINDOW_WAIT_MS):
                w.session.set_model(model, WINDOW_SRC, WINDOW_TGT)
        return w

    yield open_
    for w in opened:
        w.errors.uninstall()
        w.session.shutdown()
