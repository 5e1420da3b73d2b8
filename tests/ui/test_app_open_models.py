"""The app with models attnlab did not write: a dropped folder (nanoGPT) opens, a bare nn.Transformer state
dict asks for its settings first (and cancelling keeps the open model), File → Model info says where each
setting came from."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pickle

import pytest
import torch
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QDialog

from attnlab.ui.window import open_model
from tests.support.nanogpt_reference import train_py_checkpoint
from tests.support.tiny import build_tiny_model as tiny_model

WAIT = 15000


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(open_window):
    return open_window(tiny_model())


def test_dropping_a_nanogpt_folder_opens_it_with_its_characters(qtbot, win, tmp_path):
    chars = sorted(set("to be or not\n!,"))
    _, ckpt = train_py_checkpoint(
        dict(n_layer=1, n_head=2, n_embd=8, block_size=32, vocab_size=len(chars), dropout=0.0, bias=True)
    )
    torch.save(ckpt, tmp_path / "ckpt.pt")
    with open(tmp_path / "meta.pkl", "wb") as f:
        pickle.dump(
            {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}, f
        )
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tmp_path))])
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.dropEvent(event)
    qtbot.waitUntil(lambda: not win.session.busy, timeout=WAIT)
    assert win.session.model.config.arch == "decoder-only"
    tokens = win.session.trace["tgt.tokens"]
    assert all(len(t) == 1 for t in tokens)  # characters; no <s> in front
    html = open_model.model_info_html(win.session.model)
    assert "model_args" in html and "nanoGPT" in html


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_bare_state_dict_asks_for_settings_and_cancel_keeps_the_model(qtbot, win, tmp_path, monkeypatch):
    reference = torch.nn.Transformer(
        d_model=12, nhead=3, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, batch_first=True
    )
    path = tmp_path / "bare.pt"
    torch.save(reference.state_dict(), path)
    before = win.session.model
    asked = []

    def reject(self):
        asked.append(self)
        return QDialog.DialogCode.Rejected

    monkeypatch.setattr(open_model.ImportSettingsDialog, "exec", reject)
    win.open_checkpoint(str(path))  # the file is read on the worker, which then asks for the settings
    qtbot.waitUntil(lambda: bool(asked) and not win.session.busy, timeout=WAIT)
    assert win.session.model is before

    def accept_with_three_heads(self):
        assert self.heads.currentText() == "4"  # the default offered: the largest of 8, 4, 2, 1 dividing 12
        self.heads.setCurrentText("3")
        self.activation.setCurrentText("gelu")
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(open_model.ImportSettingsDialog, "exec", accept_with_three_heads)
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.open_checkpoint(str(path))
    qtbot.waitUntil(lambda: not win.session.busy, timeout=WAIT)
    model = win.session.model
    assert (model.config.n_heads, model.config.activation) == (3, "gelu")
    html = open_model.model_info_html(model)
    assert "given" in html and "assumed" in html
    open_model.show_model_info(win)
    assert win.findChild(QDialog, "modelInfoDialog").isVisible()


def test_output_stage_of_a_masked_lm_opens_on_the_first_mask():
    from attnlab.present.views.output import mask_position

    assert mask_position({"src.tokens": ["[CLS]", "the", "[MASK]", "sat", "[MASK]", "[SEP]"]}, 5) == 2
    assert mask_position({"src.tokens": ["<s>", "a", "<mask>", "</s>"]}, 3) == 2
    assert mask_position({"src.tokens": ["[CLS]", "the", "[SEP]"]}, 2) == 2  # no mask: the last position
    assert mask_position({"src.tokens": ["<mask>"], "tgt.tokens": ["<s>"]}, 0) == 0  # decoders: next token
