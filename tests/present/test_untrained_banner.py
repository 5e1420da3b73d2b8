"""Toggles that move a model away from how it was trained say so on the banner, with the remedy; the
"Final LayerNorm" checkbox adds the parameter-free final norm a post-norm model switched to pre-norm lacks."""

from __future__ import annotations

import pytest

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present import facts

WAIT = 20000


@pytest.fixture(scope="module")
def post_norm(tiny_model):
    return tiny_model("encoder-decoder", seed=4, norm_first=False, final_norm=False)


def _trace(model, **options):
    return model.trace("the black cat sees the small dog", "le chat", RunOptions(**options))


def test_the_trained_configuration_has_no_reasons(post_norm):
    assert facts.untrained_reasons(_trace(post_norm)) == [] and facts.untrained_banner(_trace(post_norm)) == ""


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"norm": "pre"}, "pre-norm without a final LayerNorm"),
        ({"n_heads": 2}, "2 heads instead of the trained 4"),
        ({"positional": False}, "positional encoding is off"),
        ({"residual": False}, "residual connections are off"),
        ({"scale": False}, "not divided by √dₖ"),
    ],
)
def test_each_untrained_toggle_gives_its_reason(post_norm, options, words):
    reasons = facts.untrained_reasons(_trace(post_norm, **options))
    assert len(reasons) == 1 and words in reasons[0]


def test_pre_norm_reason_names_the_logit_size_and_offers_the_final_norm(post_norm):
    trace = _trace(post_norm, norm="pre")
    peak = float(trace[names.LOGITS].abs().max())
    assert f"logits reach ~{peak:.0f}" in facts.untrained_banner(trace)
    assert facts.FINAL_NORM_REMEDY in facts.untrained_remedies(trace)
    fixed = _trace(post_norm, norm="pre", final_norm=True)
    assert facts.FINAL_NORM_REMEDY not in facts.untrained_remedies(fixed)
    assert "without a final LayerNorm" not in facts.untrained_banner(fixed)


def test_a_trained_pre_norm_model_switched_nowhere_needs_no_remedy(tiny_model):
    pre = tiny_model("decoder-only", seed=1, norm_first=True, final_norm=True)
    trace = pre.trace(None, "the black cat", RunOptions())
    assert facts.untrained_reasons(trace) == []
    assert "skipped" in facts.untrained_banner(pre.trace(None, "the black cat", RunOptions(final_norm=False)))


@pytest.fixture
def win(open_window, post_norm):
    return open_window(post_norm)


def test_banner_and_final_norm_checkbox(qtbot, win):
    check = win.findChild(type(win.controls.final_norm), "finalNormCheck")
    assert not check.isEnabled() and not check.isChecked()  # post-norm as trained: nothing to add
    assert "Untrained configuration" not in win.banner.text()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.controls.norm.setCurrentIndex(win.controls.norm.findData("pre"))
        win.controls.norm.activated.emit(win.controls.norm.currentIndex())
    assert win.banner.isVisible() and "pre-norm without a final LayerNorm" in win.banner.text()
    assert "Final LayerNorm" in win.banner.text() and check.isEnabled()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        check.click()  # as a person's click: toggled is emitted (the dock may scroll it out of view)
    assert win.session.options.final_norm is True and check.isChecked()
    assert names.norm_entry(names.stack_norm("dec"), "out") in win.session.trace
    assert "without a final LayerNorm" not in win.banner.text()
