"""Shared test fixtures: the Qt platform (set once, before anything imports Qt) and the tiny random models.

Every test that needs a small live model takes the `tiny_model` fixture, a builder:

    def test_something(tiny_model):
        model = tiny_model("decoder-only", seed=3, n_heads=2)

The builder's defaults (d_model 32, 4 heads, 2+2 layers, max_len 32, a word tokenizer trained on TEXTS) are
the one tiny model of the suite; keyword arguments change any ModelConfig field. Modules import it (and
`assert_same_trace`) directly where a module-level helper needs it: `from conftest import build_tiny_model`.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any test module imports PySide6

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.tokenizer import WordTokenizer

TEXTS = ["the black cat sees the small dog", "le chat noir voit le petit chien", "dog bites man"]
TINY_SIZES = dict(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, max_len=32)


def build_tiny_model(
    arch: str = "encoder-decoder",
    seed: int = 0,
    *,
    never_ends: bool = False,
    texts: list[str] | None = None,
    **config_changes,
) -> LiveModel:
    """A random model with a word tokenizer trained on `texts`. `never_ends`: an untied output layer whose
    bias rules out </s>, so Generate always appends a token."""
    tok = WordTokenizer.train(texts or TEXTS)
    vocab = {"src_vocab_size": tok.vocab_size, "tgt_vocab_size": tok.vocab_size}  # a change may make one larger
    sizes = {**vocab, **TINY_SIZES, **({"tie_output": False} if never_ends else {}), **config_changes}
    cfg = ModelConfig(arch=arch, **sizes)
    torch.manual_seed(seed)
    module = Transformer(cfg)
    if never_ends:
        with torch.no_grad():
            module.out_proj.bias[tok.eos_id] = -1e4
    return LiveModel(module, tok, tok, name=f"tiny-{arch}")


def assert_same_trace(a, b) -> None:
    """Two traces hold the same entries to the last bit (tolerance 0): the same names in the same order, equal
    token lists, and tensors of one dtype and shape with NaN and ±inf in the same places."""
    assert a.names() == b.names()
    for name in a.names():
        x, y = a[name], b[name]
        if isinstance(x, list):
            assert x == y, name
        else:
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert torch.equal(x.isnan(), y.isnan()) and torch.equal(x.nan_to_num(), y.nan_to_num()), name


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


def shown_widget(qtbot, widget, width: int, height: int):
    """`widget` handed to qtbot (closed after the test), at width × height, shown and exposed: the start of a
    test that paints it."""
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


WINDOW_WAIT_MS = 20000  # the first trace of a window, on a busy CI machine
WINDOW_SRC, WINDOW_TGT = "the black cat sees the dog", "le chat"  # the sentence the window tests open with


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
