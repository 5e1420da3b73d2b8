"""A banner for every departure from training (issue 32, item 5): every spec of the option table either says
why a value departs (`departs`) or why none does (`as_trained`); this walks the whole table, sets each
departing field to a departing value on a model where it applies, and requires the banner to name it, while
the trained defaults give no banner at all."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from attnlab.engine import option_rules, option_specs
from attnlab.engine.live import LiveModel
from attnlab.engine.option_spec import RunFacts
from attnlab.engine.options import RunOptions
from attnlab.engine.patch_sweep import patch_from
from attnlab.present import facts

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py

SRC, TGT = "the black cat sees the small dog", "le chat"

# field -> (the options that depart, words a person would look for on the banner), written for the tiny
# post-norm encoder-decoder below. A spec added to the table with `departs` must be added here (the first
# test fails until it is).
DEPARTING: dict[str, tuple[RunOptions | Callable[[LiveModel], RunOptions], str]] = {
    "norm": (RunOptions(norm="pre"), "pre-norm"),
    "n_heads": (RunOptions(n_heads=2), "2 heads instead of the trained 4"),
    "final_norm": (RunOptions(final_norm=True), "final LayerNorm"),
    "ablate": (RunOptions(ablate=(("dec.0.self", 1, "zero"),)), "dec.0.self head 2"),
    "causal": (RunOptions().with_causal("dec.self", False), "decoder's causal mask is off"),
    "padding_mask": (RunOptions(padding_mask=False, pad_to=12), "padding mask is off"),
    "custom_masks": (RunOptions().with_custom_mask("enc.0.self", {(0, 1), (2, 3)}), "2 attention cells"),
    "scale": (RunOptions(scale=False), "√dₖ"),
    "positional": (RunOptions(positional=False), "positional encoding is off"),
    "residual": (RunOptions(residual=False), "residual connections are off"),
    "projections": (RunOptions(projections=False), "W_Q, W_K, W_V, W_O are off"),
    # a patch carries run A's values: made from a run of the model under test
    "patch": (
        lambda model: RunOptions(
            patch=(patch_from(model.trace("the small dog sees the black cat", TGT), "dec.0.out"),)
        ),
        "patched from run A: dec.0.out (re-run from dec.0)",
    ),
}


@pytest.fixture(scope="module")
def post_norm(tiny_model):
    return tiny_model("encoder-decoder", seed=4, norm_first=False, final_norm=False)


def test_every_spec_says_whether_it_departs():
    for spec in option_specs.SPECS:
        assert (spec.departs is None) != (not spec.as_trained), f"{spec.field}: departs xor as_trained"
    # adapter_strength departs only on a model with a LoRA adapter: tests/checkpoints/test_lora_options.py
    assert set(DEPARTING) | {"adapter_strength"} == {s.field for s in option_specs.SPECS if s.departs is not None}


def test_the_trained_defaults_give_no_banner(post_norm):
    trace = post_norm.trace(SRC, TGT, RunOptions())
    assert facts.untrained_reasons(trace) == [] and facts.untrained_banner(trace) == ""


@pytest.mark.parametrize("field", sorted(DEPARTING))
def test_each_departing_spec_raises_a_banner_naming_it(post_norm, field):
    options, words = DEPARTING[field]
    options = options(post_norm) if callable(options) else options
    assert not post_norm.options_problems(options)
    trace = post_norm.trace(SRC, TGT, options)
    by_field = option_rules.departures_by_field(
        trace.config, trace.options, RunFacts(pads=lambda: int(trace.info["pads"]))
    )
    assert field in by_field  # this spec, not another, gives the reason
    banner = facts.untrained_banner(trace)
    assert banner.startswith(facts.UNTRAINED_LEAD) and words in banner
    assert all(reason in banner for reason in by_field[field])


def test_the_padding_mask_off_without_pads_changes_nothing_and_says_nothing(post_norm):
    trace = post_norm.trace(SRC, TGT, RunOptions(padding_mask=False))
    assert trace.info["pads"] == 0 and facts.untrained_banner(trace) == ""
    padded = post_norm.trace(SRC, TGT, RunOptions(pad_to=12))  # pads behind the padding mask: as trained
    assert padded.info["pads"] > 0 and facts.untrained_banner(padded) == ""


def test_the_causal_mask_departs_on_each_kind_of_site_against_its_training(post_norm, tiny_model):
    def reasons(model, options):
        return option_rules.departures(model.config, options, lambda: None)

    assert any(
        "encoder's causal mask is on" in r for r in reasons(post_norm, RunOptions().with_causal("enc.self", True))
    )
    assert any("cross-attention" in r for r in reasons(post_norm, RunOptions().with_causal("dec.cross", True)))
    assert reasons(post_norm, RunOptions().with_causal("dec.self", True)) == []  # as trained, said explicitly
    decoder_only = tiny_model("decoder-only", seed=1)
    assert reasons(decoder_only, RunOptions().with_causal("dec.self", False))
    assert reasons(decoder_only, RunOptions().with_causal("enc.self", True)) == []  # no encoder to mask


@pytest.fixture
def win(open_window, post_norm):
    return open_window(post_norm)


def test_the_decoder_causal_mask_switched_off_in_the_window_raises_the_banner(qtbot, win):
    assert "Untrained configuration" not in win.banner.text()
    check = win.controls.causal
    assert check.isChecked()
    with qtbot.waitSignal(win.session.traceReady, timeout=20000):
        check.click()
    assert not win.session.options.is_causal("dec.0.self")
    assert win.banner.isVisible() and "decoder's causal mask is off" in win.banner.text()
