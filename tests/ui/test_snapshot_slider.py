"""The training-step slider: shown on attention stages only when the open model has snapshots; moving it re-runs
the sentence with that step's weights (the panel's numbers then equal a trace made directly from the snapshot),
the banner says which step; a new model resets it; a broken snapshots file leaves the model open without it."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


import numpy as np
import pytest
import torch
from PySide6.QtWidgets import QLabel, QSlider

from attnlab.checkpoints import load_checkpoint, save_checkpoint
from attnlab.checkpoints.snapshots import load_snapshots
from attnlab.checkpoints.snapshots_file import save_snapshots, snapshots_path
from attnlab.ui.window.main_window import MainWindow
from tests.support.tiny import build_tiny_model

WAIT = 15000
SRC, TGT = "the black cat sees the dog", "le chat noir"
SITE = "dec.0.cross.weights"


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def tensors(model):
    return {n: t.detach().clone() for n, t in model.module.checkpoint_tensors().items()}


@pytest.fixture
def checkpoint(tmp_path):
    """A tiny model saved with 'snapshots' at steps 0 and 4 (two other random models of its shape), final 10."""
    final = build_tiny_model(seed=0)
    path = save_checkpoint(final, tmp_path / "tiny.safetensors")
    early = {0: tensors(build_tiny_model(seed=1)), 4: tensors(build_tiny_model(seed=2))}
    save_snapshots(snapshots_path(path), early, 10, tensors(final), losses={0: 3.5, 4: 2.25})
    return path


@pytest.fixture
def win(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.errors.uninstall()
    w.session.shutdown()


def open_file(qtbot, win, path):
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.load_async(lambda: load_checkpoint(path), path=str(path), src=SRC, tgt=TGT)
    win.session.set_stage(SITE)


def slider(win) -> QSlider:
    return win.findChild(QSlider, "trainingStepSlider")


def test_the_slider_is_there_only_with_snapshots_and_on_attention_stages(qtbot, win, checkpoint):
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_model(build_tiny_model(), SRC, TGT)
    win.session.set_stage(SITE)
    assert not slider(win).isVisible()
    open_file(qtbot, win, checkpoint)
    assert slider(win).isVisible()
    assert (slider(win).minimum(), slider(win).maximum(), slider(win).value()) == (0, 2, 2)  # 0, 4, 10: at 10
    assert win.findChild(QLabel, "trainingStepLabel").text() == "step 10 of 10 (trained)"
    assert "diagonal" in win.findChild(QLabel, "trainingStepHint").text()
    win.session.set_stage("src.tokens")
    assert not slider(win).isVisible()
    win.session.set_stage("enc.0.self.scores")
    assert slider(win).isVisible() and "diagonal" not in win.findChild(QLabel, "trainingStepHint").text()


def shown_matrix(win):
    """What the weights panel draws: the selected head's matrix (head 0)."""
    return np.asarray(win.current_panel().shown_data()["matrix"])


def test_moving_the_slider_shows_that_steps_weights(qtbot, win, checkpoint):
    open_file(qtbot, win, checkpoint)
    final = win.session.trace[SITE].clone()  # [H, T, S]
    final_drawn = shown_matrix(win)
    np.testing.assert_array_equal(final_drawn, final[0].numpy())
    snapshots = load_snapshots(checkpoint)
    for index, step in ((0, 0), (1, 4)):
        with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
            slider(win).setValue(index)
        assert win.session.training_step == step
        direct = snapshots.model_at(step).trace(SRC, TGT)[SITE]  # [H, T, S]
        # the app's worker thread sums with another number of threads than this one: the last bits may differ
        torch.testing.assert_close(win.session.trace[SITE], direct, rtol=0, atol=1e-6)
        np.testing.assert_allclose(shown_matrix(win), direct[0].numpy(), rtol=0, atol=1e-6)
        assert not np.allclose(shown_matrix(win), final_drawn)
    assert win.findChild(QLabel, "trainingStepLabel").text() == "step 4 of 10 · training loss 2.25"
    assert "Weights at training step 4 of 10" in win.banner.text()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        slider(win).setValue(2)  # the right end: the trained model again
    assert win.session.training_step is None and torch.equal(win.session.trace[SITE], final)
    np.testing.assert_array_equal(shown_matrix(win), final_drawn)
    assert "training step" not in win.banner.text()
    assert win.findChild(QLabel, "trainingStepLabel").text() == "step 10 of 10 (trained)"


def test_a_new_model_resets_the_slider(qtbot, win, checkpoint):
    open_file(qtbot, win, checkpoint)
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        slider(win).setValue(0)
    open_file(qtbot, win, checkpoint)
    assert win.session.training_step is None and slider(win).value() == 2
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_model(build_tiny_model(seed=5), SRC, TGT)
    assert win.session.snapshots is None and not slider(win).isVisible()


def test_a_broken_snapshots_file_leaves_the_model_open_without_the_slider(qtbot, win, checkpoint):
    snapshots_path(checkpoint).write_bytes(b"not a safetensors file at all")
    notices = []
    win.session.notice.connect(notices.append)
    open_file(qtbot, win, checkpoint)
    assert win.session.model is not None and win.session.snapshots is None
    assert not slider(win).isVisible()
    assert any("snapshots beside this model were not loaded" in n and "not a safetensors file" in n for n in notices)
