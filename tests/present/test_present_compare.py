"""present/compare.py and present/ablation.py: B − A equals the difference of two traces computed directly,
mismatched shapes give a message instead of a difference, and the before → after of the next-token
distribution names the token that flips."""

import numpy as np
import pytest
import torch

from attnlab.engine.options import RunOptions
from attnlab.present import ablation, compare
from attnlab.present.stages import stages_for

SRC, TGT = "the black cat sees the small dog", "le chat noir"


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", seed=4)


def stage(trace, kind, site=None):
    return next(s for s in stages_for(trace) if s.kind == kind and (site is None or s.site == site))


def test_b_minus_a_is_the_difference_of_two_traces(model):
    a = model.trace(SRC, TGT, RunOptions(norm="post"))
    b = model.trace(SRC, TGT, RunOptions(norm="pre"))
    entries = compare.compare_stage(a, b, stage(b, "weights", "enc.1.self"), head=3)
    (weights,) = entries
    expected = b["enc.1.self.weights"][3] - a["enc.1.self.weights"][3]  # computed directly from the traces
    np.testing.assert_array_equal(weights.difference, expected.numpy())
    np.testing.assert_array_equal(weights.a, a["enc.1.self.weights"][3].numpy())
    assert weights.message == "" and np.abs(weights.difference).max() > 0


def test_every_entry_of_a_matrix_stage_is_paired(model):
    a, b = model.trace(SRC, TGT), model.trace(SRC, TGT, RunOptions(scale=False))
    addnorm = next(s for s in stages_for(b) if s.kind == "addnorm")
    entries = compare.compare_stage(a, b, addnorm, head=0)
    assert len(entries) == 2
    for entry in entries:
        np.testing.assert_array_equal(entry.difference, (b[entry.name] - a[entry.name]).numpy())


def test_different_sentence_lengths_give_a_message(model):
    a = model.trace("dog bites man", TGT)
    b = model.trace(SRC, TGT)
    (entry,) = compare.compare_stage(a, b, stage(b, "weights", "enc.0.self"), head=0)
    assert entry.difference is None and "different sentence lengths" in entry.message
    assert entry.a.shape == (4, 4) and entry.b.shape == (8, 8)


def test_a_head_only_one_run_has_is_said(model):
    a, b = model.trace(SRC, TGT), model.trace(SRC, TGT, RunOptions(n_heads=8))
    (entry,) = compare.compare_stage(a, b, stage(b, "weights", "enc.0.self"), head=6)
    assert entry.difference is None and entry.a is None and "A has 4" in entry.message
    assert "head 7 is not in A" in entry.message  # trace head 6, counted from 1 as the window counts
    q = compare.compare_stage(a, b, stage(b, "qkv", "enc.0.self"), head=1)[0]
    assert q.difference is None and "head count differs (4 in A, 8 in B)" in q.message  # d_k 8 in A, 4 in B


def test_scales_one_for_a_and_b_symmetric_for_the_difference():
    a, b = np.array([[0.0, 2.0]]), np.array([[2.0, -1.0]])
    assert compare.shared_range(a, b) == (-1.0, 2.0)
    assert compare.symmetric_range(b - a) == (-3.0, 3.0)


def test_distribution_change_and_flip():
    before = np.array([0.1, 0.6, 0.3, 0.0])
    after = np.array([0.5, 0.2, 0.3, 0.0])
    change = ablation.distribution_change(before, after, k=2)
    assert change.top_before == [1, 2] and change.top_after == [0, 2]
    assert change.ids == [0, 2, 1] and change.flipped == (1, 0)
    np.testing.assert_array_equal(change.before, before[[0, 2, 1]])
    text = ablation.change_text(change, lambda i: "abcd"[i])
    assert "“b” 60.0% → 20.0%" in text and "flips from “b” to “a”" in text
    same = ablation.distribution_change(before, before, k=2)
    assert same.flipped is None and "stays “1”" in ablation.change_text(same, str)


def test_baseline_probs_are_the_unablated_run(model):
    options = RunOptions(ablate=(("dec.1.self", 1, "zero"),), temperature=0.7)
    before = ablation.baseline_probs(model, SRC, TGT, options)
    plain = model.trace(SRC, TGT, RunOptions(temperature=0.7))["probs"]
    torch.testing.assert_close(before, plain, rtol=1e-4, atol=1e-6)
    assert ablation.baseline_probs(model, SRC, TGT, RunOptions()) is None
    assert "head 2 of decoder layer 2 self-attention zeroed" in ablation.ablation_words(options.ablate)
