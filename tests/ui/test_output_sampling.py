"""The output panel draws the top-k / top-p cut and "Sample 20 times" (issue 35), from the view-model only."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.checkpoints import load_bundled
from attnlab.engine.options import RunOptions
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.stages import panel_class_for
from tests.support.tiny import shown_widget

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
SRC, TGT = "the black cat sees the small dog", "le chat noir voit le"


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


def shown(qtbot, model, options: RunOptions, top: int = 12):
    panel = shown_widget(qtbot, panel_class_for("probs")(), 800, 600)
    trace = model.trace(SRC, TGT, options)
    stage = next(s for s in stages_for(trace) if s.kind == "probs")
    panel.show_stage(trace, stage, ViewState(top_k=top))
    return panel, trace


def test_the_cut_line_sits_under_the_last_kept_bar(qtbot, translation):
    panel, trace = shown(qtbot, translation, RunOptions(sample=True, top_k=3, temperature=1.5))
    data = panel.shown_data()
    assert data["kept"] == [True] * 3 + [False] * 9
    assert data["cut_at"] == 2.5 and panel._cut.line.isVisible() and panel._cut.line.value() == 2.5
    logits = trace.read("logits", -1).float()  # [V]
    tempered = torch.softmax(logits / 1.5, dim=-1)  # [V]
    top3 = torch.topk(tempered, 3).indices
    expected = tempered[top3] / tempered[top3].sum()  # softmax(logits / T) renormalised over the kept
    assert np.allclose(data["values"][:3], expected.numpy(), atol=1e-6)
    assert np.all(data["values"][3:] == 0)
    assert np.allclose(data["raw"], torch.sort(tempered, descending=True).values[:12].numpy(), atol=1e-6)


def test_greedy_runs_show_no_cut_and_no_draws(qtbot, translation):
    panel, _trace = shown(qtbot, translation, RunOptions())
    assert "cut_at" not in panel.shown_data()
    assert not panel._cut.line.isVisible()
    assert not panel._samples.button.isEnabled()


def test_sample_20_times_shows_the_seeded_draws(qtbot, translation):
    panel, trace = shown(qtbot, translation, RunOptions(sample=True, top_p=0.9, seed=5, temperature=2.0))
    assert not panel._samples.isVisible()
    panel._samples.button.setChecked(True)
    assert panel._samples.isVisible()
    samples = panel.shown_data()["samples"]
    assert samples.total == 20 and samples.seeds == (5, 24)
    from attnlab.engine.sampling import SamplingSettings, choose_next, seeded

    settings = SamplingSettings(True, 2.0, 50, 0.9, 5)
    logits = trace.read("logits", -1)  # [V]
    draws = [choose_next(logits, settings, seeded(5 + i)) for i in range(20)]
    assert sorted(samples.ids) == sorted(set(draws))
    assert {i: n for i, n in zip(samples.ids, samples.counts, strict=True)} == {i: draws.count(i) for i in set(draws)}
    assert "seeds 5…24" in panel._samples.note.text()


def test_the_logits_stage_of_a_sampled_run_draws_the_cut_without_the_grey_bars(qtbot, translation):
    """The logits stage shows logits, not probabilities: no grey bars before the cut, the cut line still drawn
    (a storm of random actions hit this: the grey bars were handed rows but no heights)."""
    panel = shown_widget(qtbot, panel_class_for("logits")(), 800, 600)
    trace = translation.trace(SRC, TGT, RunOptions(sample=True, top_k=3))
    stage = next(s for s in stages_for(trace) if s.kind == "logits")
    panel.show_stage(trace, stage, ViewState(top_k=12))
    assert len(panel._cut.raw._heights) == 0
    assert panel.shown_data()["kept"] == [True] * 3 + [False] * 9 and panel._cut.line.isVisible()
