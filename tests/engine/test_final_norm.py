"""RunOptions.final_norm: the parameter-free LayerNorm a post-norm model switched to pre-norm lacks, checked
against torch.nn.functional.layer_norm, and recorded as `enc.norm` / `dec.norm` like a trained final norm."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlab.engine import names
from attnlab.engine.options import OptionsError, RunOptions


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", seed=5, final_norm=False, norm_first=False)


def _run(model, **options):
    return model.trace("the black cat sees the small dog", "le chat noir", RunOptions(**options))


def test_final_norm_adds_a_plain_layer_norm_after_each_stack(model):
    plain = _run(model, norm="pre")
    normed = _run(model, norm="pre", final_norm=True)
    for stack in ("enc", "dec"):
        assert names.norm_entry(names.stack_norm(stack), "out") not in plain
        x = normed[names.norm_entry(names.stack_norm(stack), "in")]  # [T, d]
        expected = F.layer_norm(x, x.shape[-1:], eps=model.config.layer_norm_eps)
        torch.testing.assert_close(normed[names.norm_entry(names.stack_norm(stack), "out")], expected)
        torch.testing.assert_close(normed[names.stack_out(stack)], expected)
    # the encoder's normalised output is what cross-attention reads, so the decoder changes too
    assert not torch.allclose(plain[names.LOGITS], normed[names.LOGITS])


def test_final_norm_as_trained_changes_nothing(model):
    a, b = _run(model), _run(model, final_norm=None)
    torch.testing.assert_close(a[names.LOGITS], b[names.LOGITS])


def test_final_norm_false_skips_a_trained_final_norm(tiny_model):
    trained = tiny_model("decoder-only", seed=2, final_norm=True, norm_first=True)
    with_norm = trained.trace(None, "the black cat", RunOptions())
    without = trained.trace(None, "the black cat", RunOptions(final_norm=False))
    assert names.norm_entry(names.stack_norm("dec"), "out") in with_norm
    assert names.norm_entry(names.stack_norm("dec"), "out") not in without
    torch.testing.assert_close(
        without[names.stack_out("dec")], with_norm[names.norm_entry(names.stack_norm("dec"), "in")]
    )


def test_final_norm_must_be_none_or_a_bool(model):
    with pytest.raises(OptionsError, match="final_norm"):
        RunOptions(final_norm=1).validate(model.config)
