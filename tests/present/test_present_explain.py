"""Explanations and facts (attnlab.present.explain, .facts): live shapes, and how the run was made read from
the RunOptions the trace carries, never inferred from its numbers. Qt-free: no QApplication here."""

import dataclasses

import pytest

from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Trace
from attnlab.present import facts
from attnlab.present.explain import explanation_html
from attnlab.present.stages import stages_for
from tests.support.tiny import build_tiny_model

SRC, TGT = "the black cat sees the dog", "le chat noir"


def make(arch="encoder-decoder", **kw) -> LiveModel:
    return build_tiny_model(arch, n_encoder_layers=1, **kw)


@pytest.fixture(scope="module")
def enc_dec():
    return make()


def test_explanations_carry_live_shapes_and_toggles(enc_dec):
    trace = enc_dec.trace(SRC, TGT, RunOptions(n_heads=8, scale=False, norm="pre"))
    by_key = {s.key: s for s in stages_for(trace)}
    S, T = len(trace["src.tokens"]), len(trace["tgt.tokens"])
    qkv = explanation_html(by_key["dec.0.cross.qkv"], trace)
    assert f"Q: 8 heads × {T} tokens × 4" in qkv and f"8 heads × {S} tokens × 4" in qkv
    assert "encoder" in qkv
    assert "switched OFF" in explanation_html(by_key["enc.0.self.scaled"], trace)
    assert "Pre-norm" in explanation_html(by_key["enc.0.norm1"], trace)
    assert "causal" in explanation_html(by_key["dec.0.self.mask"], trace)
    assert f"[{T} × 64]" in explanation_html(by_key["dec.1.ffn"], trace)
    for stage in stages_for(trace):
        text = explanation_html(stage, trace)
        assert text.startswith("<h3>") and len(text) > 200
    post = enc_dec.trace(SRC, TGT)
    assert "√8 ≈ 2.83" in explanation_html(by_key["enc.0.self.scaled"], post)
    assert "Post-norm" in explanation_html(by_key["enc.0.norm1"], post)


@pytest.mark.parametrize(
    ("norm_first", "asked", "placement"),
    [(False, "trained", "post"), (True, "trained", "pre"), (False, "pre", "pre"), (True, "post", "post")],
)
def test_norm_placement_is_the_resolved_option(norm_first, asked, placement):
    trace = make(norm_first=norm_first).trace(SRC, TGT, RunOptions(norm=asked))
    assert facts.norm_placement(trace) == placement
    by_key = {s.key: s for s in stages_for(trace)}
    assert f"{placement.capitalize()}-norm in this run" in explanation_html(by_key["enc.0.norm1"], trace)


def test_a_trace_is_whole_at_birth(enc_dec):
    """No Trace without its config, resolved options, device and notices: nobody guesses the placement."""
    made = enc_dec.trace(SRC, TGT)
    with pytest.raises(TypeError):
        Trace(made.entries)  # type: ignore[call-arg]  # built by hand without what made it
    with pytest.raises(ValueError, match="resolved"):
        dataclasses.replace(made.options, norm="trained")  # an "as trained" placement is not a run's
    whole = Trace(made.entries, config=made.config, options=made.options, device="cpu", notices=[])
    assert facts.norm_placement(whole) == ("pre" if made.config.norm_first else "post")


def test_toggles_are_read_from_the_options_not_from_the_numbers(enc_dec):
    off = enc_dec.trace(SRC, TGT, RunOptions(residual=False, scale=False, temperature=0.5))
    assert not facts.residual_on(off) and not facts.scaling_on(off) and facts.run_temperature(off) == 0.5
    on = enc_dec.trace(SRC, TGT)
    assert facts.residual_on(on) and facts.scaling_on(on) and facts.run_temperature(on) == 1.0
    # numbers that look like "scaling off" do not make it so: the options say how the run was made
    on.entries["enc.0.self.scaled"] = on.entries["enc.0.self.scores"]
    by_key = {s.key: s for s in stages_for(on)}
    assert "switched OFF" not in explanation_html(by_key["enc.0.self.scaled"], on)
    assert "switched OFF" in explanation_html(by_key["enc.0.self.scaled"], off)


@pytest.mark.parametrize(
    ("arch", "layer", "n", "expected"),
    [
        ("encoder-decoder", "enc.0", 1, "enc.0.self.out"),
        ("encoder-decoder", "enc.0", 2, "enc.0.ffn.out"),
        ("encoder-decoder", "dec.1", 2, "dec.1.cross.out"),
        ("encoder-decoder", "dec.1", 3, "dec.1.ffn.out"),
        ("decoder-only", "dec.0", 2, "dec.0.ffn.out"),
    ],
)
def test_the_sublayer_an_add_and_norm_wraps(arch, layer, n, expected):
    model = make(arch)
    trace = model.trace(SRC, TGT) if arch == "encoder-decoder" else model.trace(None, SRC)
    assert facts.sublayer_output(trace, layer, n) == expected and expected in trace
