"""Every cached revision as a training step (issue 34): a repository whose cache keeps step1000, step2000 and
step3000 (= main) as branches, as Pythia's does, gives a 3-position training-step slider whose runs equal each
revision opened alone."""

from __future__ import annotations

import json

import pytest
import torch
from huggingface_hub import constants, scan_cache_dir
from PySide6.QtWidgets import QLabel, QSlider

from attnlab.checkpoints import load_checkpoint
from attnlab.checkpoints.snapshots import find_snapshots, load_snapshots
from attnlab.cli import main
from attnlab.ui.window.main_window import MainWindow
from tests.support import hf_tiny
from tests.support.hf_cache_files import add_revision, saved_gpt2

REPO = "acme/pythia-tiny"
SRC = "5 17 3 88 42"  # token ids: the tiny model has no tokenizer
SITE = "dec.0.self.weights"
WAIT = 15000

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The files of three training steps of one tiny GPT-2 (different weights), and of another model."""
    d = tmp_path_factory.mktemp("steps")
    steps = {step: saved_gpt2(d, seed) for step, seed in ((1000, 1), (2000, 2), (3000, 0))}
    other = dict(steps[1000])
    other["config.json"] = json.dumps(json.loads(other["config.json"]) | {"n_inner": 64}).encode()
    return steps, other


@pytest.fixture
def cache(tmp_path, monkeypatch, saved):
    steps, other = saved
    hub = tmp_path / "hub"
    for step, files in steps.items():
        add_revision(hub, REPO, files, refs=(f"step{step}",) + (("main",) if step == 3000 else ()))
    add_revision(hub, REPO, other, refs=("step500",))  # another config: not a step of this model
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    return hub


def test_the_cache_holds_four_revisions_as_huggingface_hub_sees_them(cache):
    (repo,) = scan_cache_dir(cache).repos
    refs = sorted(ref for revision in repo.revisions for ref in revision.refs)
    assert refs == ["main", "step1000", "step2000", "step3000", "step500"]


def test_three_revisions_are_three_steps_that_equal_each_revision_alone(cache):
    model = load_checkpoint(REPO)
    snapshots, problem = find_snapshots(model)
    assert problem == "" and snapshots is not None
    assert snapshots.steps == (1000, 2000, 3000) and snapshots.final_step == 3000
    for step in snapshots.steps:
        alone = load_checkpoint(f"{REPO}@step{step}")
        ours = snapshots.model_at(step).trace(None, hf_tiny.IDS)
        theirs = alone.trace(None, hf_tiny.IDS)
        assert torch.equal(ours["logits"], theirs["logits"]) and torch.equal(ours[SITE], theirs[SITE])
    first, last = (snapshots.model_at(s).trace(None, hf_tiny.IDS)["logits"] for s in (1000, 3000))
    assert not torch.allclose(first, last)


def test_an_earlier_step_opened_sees_only_the_steps_before_it(cache):
    snapshots = load_snapshots(load_checkpoint(f"{REPO}@step2000"))
    assert snapshots.steps == (1000, 2000)


def test_a_revision_not_named_by_a_step_has_no_slider(cache, saved):
    add_revision(cache, "acme/plain", saved[0][1000])
    assert find_snapshots(load_checkpoint("acme/plain")) == (None, "")


def test_trace_runs_a_cached_step(cache, tmp_path):
    out = tmp_path / "t.npz"
    assert main(["trace", "--checkpoint", REPO, "--training-step", "1000", "--src", SRC, "--out", str(out)]) == 0
    import numpy as np

    alone = load_checkpoint(f"{REPO}@step1000").trace(SRC)
    np.testing.assert_array_equal(np.load(out)[SITE], alone[SITE].numpy())


def test_the_slider_has_three_positions_whose_runs_equal_each_revision(qtbot, cache):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    try:
        win.session.src = SRC  # what the model opens on
        with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
            win.open_checkpoint(REPO)  # by id, as File → Open model… opens it
        win.session.set_stage(SITE)
        slider = win.findChild(QSlider, "trainingStepSlider")
        assert slider.isVisible() and (slider.minimum(), slider.maximum(), slider.value()) == (0, 2, 2)
        assert win.findChild(QLabel, "trainingStepLabel").text() == "step 3000 of 3000 (trained)"
        for index, step in enumerate((1000, 2000, 3000)):
            with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
                slider.setValue(index)
            alone = load_checkpoint(f"{REPO}@step{step}").trace(SRC)[SITE]  # [H, T, T]
            # the app's worker thread sums with another number of threads than this one: the last bits may differ
            torch.testing.assert_close(win.session.trace[SITE], alone, rtol=0, atol=1e-6)
    finally:
        win.errors.uninstall()
        win.session.shutdown()
