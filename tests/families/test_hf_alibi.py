"""The position bias on the attention scores (engine/position_bias.py), checked against transformers: BLOOM's
ALiBi slopes and bias come from modeling_bloom's own functions; the bias stage draws exactly that bias; the
eager recorder, the lazy (derived) trace and the fused kernel agree; a BLOOM setting attnlab cannot build is
refused naming its config.json field. (Agreement of every layer with BloomForCausalLM, config without weights
and the toggles: test_hf_families.py, through family_cases.FAMILY_CASES.)"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from transformers.models.bloom import modeling_bloom
from transformers.models.mpnet.modeling_mpnet import MPNetEncoder
from transformers.models.t5.modeling_t5 import T5Attention

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine import derived_blocks, names, option_rules
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions, head_choices
from attnlab.engine.position_bias import alibi_slopes, relative_bucket
from attnlab.engine.trace import Recorder, finish
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.views.model import MessageView
from tests.engine.test_trace_budget import assert_estimate_close
from tests.support.hf_tiny import IDS, compare_with_hf
from tests.support.hf_tiny_alibi import ALIBI_CASES, MPNET_CASES, bloom, mpnet
from tests.support.tiny import build_tiny_model

TOL = 1e-4
T = len(IDS)


@pytest.fixture(scope="module")
def converted():
    model, hf_config = bloom()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    return model, hf_config, config, module.eval()


def run(module, options: RunOptions | None = None, eager=False, record=True):
    options = options or RunOptions()
    rec = Recorder(record, eager=eager)
    rec.tokens(names.side_entry("tgt", "tokens"), [f"t{i}" for i in IDS])  # what LiveModel records first
    with torch.inference_mode():
        logits = module(None, torch.tensor([IDS]), options=options, rec=rec)
    return logits, finish(rec, module.config, options.resolved(module.config), "cpu") if record else None


def their_alibi(n_heads: int) -> torch.Tensor:
    """transformers' bias for one unpadded sentence: [H, T] (every query row the same)."""
    ones = torch.ones(1, T, dtype=torch.long)
    return modeling_bloom.build_alibi_tensor(ones, n_heads, torch.float32).reshape(n_heads, T)


@pytest.mark.parametrize("n_heads", [1, 2, 3, 5, 6, 8, 12, 16, 20, 112])
def test_the_slopes_are_blooms(n_heads):
    theirs = modeling_bloom._get_alibi_slopes(n_heads, torch.device("cpu"))
    assert torch.equal(alibi_slopes(n_heads), theirs)


@pytest.mark.parametrize("name", list(ALIBI_CASES))
def test_every_layer_agrees_with_bloom(name):
    case, _ = ALIBI_CASES[name]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    errors = compare_with_hf(case, model, config, state)
    assert len(errors) >= 2 * config.n_decoder_layers + 2
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOL, f"{name} {worst} differs by {errors[worst]:.2e}"
    assert config_from_hf(hf_config) == config and config.position_bias == "alibi"


def test_the_bias_stage_draws_transformers_bias_for_every_head(converted):
    _model, _hf, config, module = converted
    _, trace = run(module)
    stages = {s.key: s for s in stages_for(trace)}
    keys = [s.key for s in stages_for(trace) if s.site == "dec.0.self"]
    assert keys.index("dec.0.self.scaled") < keys.index("dec.0.self.bias") < keys.index("dec.0.self.biased")
    assert keys.index("dec.0.self.biased") < keys.index("dec.0.self.mask")
    theirs = their_alibi(config.n_heads)  # [H, T]
    for layer in range(config.n_decoder_layers):
        for head in range(config.n_heads):
            view = view_for(trace, stages[f"dec.{layer}.self.bias"], ViewState(head=head))
            assert not isinstance(view, MessageView)
            assert torch.equal(torch.from_numpy(view.matrix.matrix), theirs[head].expand(T, T))
            assert f"{float(theirs[head, 1]):.4g}" in view.note  # the head's slope m_h


def test_the_scores_after_the_bias_are_scaled_plus_bias_then_the_mask(converted):
    _model, _hf, config, module = converted
    _, trace = run(module)
    stage = next(s for s in stages_for(trace) if s.key == "dec.1.self.biased")
    scaled, bias = trace["dec.1.self.scaled"], trace["dec.1.self.bias"]  # [H, T, T]
    view = view_for(trace, stage, ViewState(head=2))
    assert torch.allclose(torch.from_numpy(view.matrix.matrix), scaled[2] + bias[2])
    assert torch.equal(trace["dec.1.self.masked"], trace["dec.1.self.biased"] + trace["dec.1.self.mask"])


def test_eager_lazy_blocked_and_fused_paths_agree(converted, monkeypatch):
    _model, _hf, config, module = converted
    fused, _ = run(module, record=False)
    lazy_logits, lazy = run(module)
    eager_logits, eager = run(module, eager=True)
    assert torch.allclose(fused, lazy_logits, atol=1e-5, rtol=1e-5) and torch.allclose(fused, eager_logits, atol=1e-5)
    for step in ("bias", "biased", "masked", "weights"):
        name = names.site_entry("dec.1.self", step)
        assert torch.allclose(lazy[name], eager[name], atol=1e-5), name
    monkeypatch.setattr(derived_blocks, "BLOCK_BYTES", 64)  # read the maps a few rows of one head at a time
    assert derived_blocks.is_big_map(lazy, "dec.0.self.weights")
    assert torch.allclose(
        derived_blocks.heads_value(lazy, "dec.0.self.weights"), eager["dec.0.self.weights"], atol=1e-6
    )


def test_a_re_split_gets_the_slopes_of_its_own_head_count(converted):
    _model, _hf, config, module = converted
    options = RunOptions(n_heads=3)
    _, trace = run(module, options)
    assert torch.equal(trace["dec.0.self.bias"][:, 0], their_alibi(3))


def test_positions_off_remove_the_bias_and_the_stage_says_so(converted):
    _model, _hf, config, module = converted
    spec = next(s for s in option_rules.specs() if s.field == "positional")
    assert spec.controls[0].unavailable(config, RunOptions()) is None  # the check box works for ALiBi
    on, trace_on = run(module)
    off, trace = run(module, RunOptions(positional=False))
    assert "dec.0.self.bias" not in trace and not torch.allclose(on, off)
    assert option_rules.departures(config, RunOptions(positional=False), lambda: None)
    stages = stages_for(trace)
    assert [s.key for s in stages] == [s.key for s in stages_for(trace_on)]  # the stage list does not shift
    view = view_for(trace, next(s for s in stages if s.key == "dec.0.self.bias"), ViewState())
    assert isinstance(view, MessageView) and "switched off" in view.message
    assert isinstance(
        view_for(trace, next(s for s in stages if s.key == "dec.0.self.biased"), ViewState()), MessageView
    )
    scores = trace["dec.0.self.scaled"] + trace["dec.0.self.mask"]
    assert torch.equal(trace["dec.0.self.masked"], scores)


def test_the_pages_state_the_formula_with_the_models_slopes(converted):
    _model, _hf, config, module = converted
    _, trace = run(module)
    stages = {s.key: s for s in stages_for(trace)}
    page = explanation_html(stages["dec.0.self.bias"], trace)
    assert "m<sub>h</sub> · j" in page and "−m<sub>h</sub>(i − j)" in page
    assert "k = 1 … 4" in page and "k = 1, 3, 5" in page  # 6 heads: 4 from the first sequence, 2 odd powers
    assert f"{float(alibi_slopes(6)[4]):.4g}" in page
    assert "Q Kᵀ / √d<sub>k</sub> + B" in explanation_html(stages["dec.0.self.biased"], trace)
    _, unscaled = run(module, RunOptions(scale=False))
    unscaled_stage = next(s for s in stages_for(unscaled) if s.key == "dec.0.self.biased")
    assert "switched off" in explanation_html(unscaled_stage, unscaled) and "÷√dₖ off" in unscaled_stage.title


def test_the_budget_counts_the_stored_bias():
    changes = {"arch": "decoder-only", "positional": "none", "position_bias": "alibi", "n_heads": 8}
    long = " ".join(["the black cat sees the small dog"] * 6)
    assert_estimate_close(build_tiny_model(**changes), RunOptions(), "", long)
    assert_estimate_close(build_tiny_model(**changes), RunOptions(n_heads=2), "", long)
    relative = {"positional": "none", "position_bias": "t5", "n_heads": 8, "trained_scale": False}
    assert_estimate_close(build_tiny_model(**relative), RunOptions(), long, long)  # one B per stack


@pytest.mark.parametrize(
    ("change", "field"),
    [({"apply_residual_connection_post_layernorm": True}, "apply_residual_connection_post_layernorm")],
)
def test_what_attnlab_cannot_build_is_refused_naming_the_field(change, field):
    _model, hf_config = bloom()
    with pytest.raises(CheckpointError) as refused:
        config_from_hf({**hf_config, **change})
    assert field in str(refused.value) and "\n" not in str(refused.value)


# ---- MPNet: a learned relative position bias (T5's buckets), one table for every layer -------------------------
@pytest.mark.parametrize("name", list(MPNET_CASES))
def test_every_mpnet_layer_agrees_with_transformers(name):
    case, _ = MPNET_CASES[name]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    errors = compare_with_hf(case, model, config, state)
    assert len(errors) >= 2 * config.n_encoder_layers + 1
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOL, f"{name} {worst} differs by {errors[worst]:.2e}"
    assert config_from_hf(hf_config).position_bias == "t5"


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(("buckets", "distance"), [(32, 128), (16, 20), (8, 9)])
def test_the_buckets_are_t5s(bidirectional, buckets, distance):
    """Every bucket up to 300 positions apart: the exact half and the logarithmic half, both directions."""
    T = 300
    relative = torch.arange(T)[None, :] - torch.arange(T)[:, None]  # j − i
    theirs = T5Attention._relative_position_bucket(relative, bidirectional, buckets, distance)
    assert torch.equal(relative_bucket(T, T, bidirectional, buckets, distance), theirs)
    if bidirectional and buckets == 32:  # MPNet's own copy of the function
        assert torch.equal(theirs, MPNetEncoder.relative_position_bucket(relative, buckets, distance))


def test_a_long_mpnet_input_reaches_the_logarithmic_buckets_and_agrees():
    """40 tokens: distances past the 8 exact buckets, so the logarithmic ones are read too."""
    model, hf_config = mpnet()
    config, state, _ = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    ids = torch.arange(2, 40)[None] % 97 + 2  # no id 1 (MPNet's padding_idx)
    rec = Recorder(True)
    with torch.inference_mode():
        ours = module(ids, None, rec=rec)
        theirs = model(input_ids=ids, output_attentions=True)
    trace = finish(rec, config, RunOptions().resolved(config), "cpu")
    assert (ours - theirs.logits).abs().max() <= TOL
    for layer, weights in enumerate(theirs.attentions):
        assert (trace[f"enc.{layer}.self.weights"] - weights[0]).abs().max() <= TOL
    table = model.mpnet.encoder.relative_attention_bias.weight  # [32, H]
    relative = torch.arange(38)[None] - torch.arange(38)[:, None]  # j − i
    expected = table[model.mpnet.encoder.relative_position_bucket(relative)]  # [T, T, H]
    assert torch.equal(trace["enc.0.self.bias"], expected.permute(2, 0, 1))  # [H, T, T]
    assert trace.entries["enc.1.self.bias"].data_ptr() == trace.entries["enc.0.self.bias"].data_ptr()  # one B


def test_the_mpnet_bias_stage_draws_the_buckets_and_the_heads_numbers():
    model, hf_config = mpnet()
    config, state, _ = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    rec = Recorder(True)
    rec.tokens(names.side_entry("src", "tokens"), [f"t{i}" for i in IDS])
    with torch.inference_mode():
        module.eval()(torch.tensor([IDS]), None, rec=rec)
    trace = finish(rec, config, RunOptions().resolved(config), "cpu")
    stage = next(s for s in stages_for(trace) if s.key == "enc.1.self.bias")
    view = view_for(trace, stage, ViewState(head=3))
    relative = torch.arange(T)[None, :] - torch.arange(T)[:, None]
    buckets = MPNetEncoder.relative_position_bucket(relative)
    assert torch.equal(torch.from_numpy(view.buckets.matrix).long(), buckets)
    table = model.mpnet.encoder.relative_attention_bias.weight.detach()  # [32, H]
    assert torch.equal(torch.from_numpy(view.matrix.matrix), table[buckets][..., 3])
    page = explanation_html(stage, trace)
    assert "b<sub>h</sub>[bucket(j − i)]" in page and "buckets 16 … 31" in page and "ln(128 / 8)" in page


def test_mpnet_toggles_run_and_its_heads_cannot_be_re_split():
    model, hf_config = mpnet()
    config, state, _ = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    with torch.inference_mode():
        base = module(torch.tensor([IDS]), None)
        for options in (RunOptions(norm="pre"), RunOptions(scale=False), RunOptions(positional=False)):
            logits = module(torch.tensor([IDS]), None, options=options.validate(config))
            assert torch.isfinite(logits).all() and not torch.allclose(logits, base), options
    problems = RunOptions(n_heads=2).problems(config)
    assert len(problems) == 1 and "one learned column per trained head" in problems[0]
    assert head_choices(config) == [config.n_heads]


def test_mpnet_settings_attnlab_cannot_build_are_refused():
    _model, hf_config = mpnet()
    with pytest.raises(CheckpointError) as refused:
        config_from_hf({**hf_config, "relative_attention_num_buckets": 64})
    assert "relative_attention_num_buckets" in str(refused.value)
