"""T5 through attnlab's engine against transformers' T5ForConditionalGeneration (v1.0 ReLU and v1.1 gated-GELU):
every layer's attention maps (self, masked self, cross), every hidden state and the logits to 1e-4; the relative
position bias of each stack equals the table read through T5Attention._relative_position_bucket (bidirectional
in the encoder, backwards in the decoder) and is one tensor for every layer; no ÷√dₖ as trained, said so on the
page; the toggles run; what attnlab cannot build is refused naming its config.json field."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from transformers.models.t5.modeling_t5 import T5Attention

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine import names, option_rules
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder, finish
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stages_for
from tests.support.hf_tiny import DEC_IDS, IDS, compare_with_hf
from tests.support.hf_tiny_alibi import T5_CASES, t5

TOL = 1e-4


@pytest.fixture(scope="module", params=list(T5_CASES))
def converted(request):
    case, _ = T5_CASES[request.param]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    return case, model, hf_config, config, state, module.eval()


def run(module, options: RunOptions | None = None, eager: bool = False):
    options = options or RunOptions()
    rec = Recorder(True, eager=eager)
    rec.tokens(names.side_entry("src", "tokens"), [f"s{i}" for i in IDS])
    rec.tokens(names.side_entry("tgt", "tokens"), [f"t{i}" for i in DEC_IDS])
    with torch.inference_mode():
        logits = module(torch.tensor([IDS]), torch.tensor([DEC_IDS]), options=options, rec=rec)
    return logits, finish(rec, module.config, options.resolved(module.config), "cpu")


def test_every_attention_map_hidden_state_and_logit_agrees(converted):
    case, model, hf_config, config, state, _module = converted
    errors = compare_with_hf(case, model, config, state)
    assert len(errors) >= 3 * config.n_decoder_layers + 2 * config.n_encoder_layers + 3
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOL, f"{case.name} {worst} differs by {errors[worst]:.2e}"
    assert config_from_hf(hf_config) == config


def test_each_stacks_bias_is_the_table_read_by_t5s_buckets(converted):
    _case, model, _hf, config, _state, module = converted
    _, trace = run(module)
    for stack, hf_stack, T in (("enc", model.encoder, len(IDS)), ("dec", model.decoder, len(DEC_IDS))):
        relative = torch.arange(T)[None, :] - torch.arange(T)[:, None]  # j − i
        buckets = T5Attention._relative_position_bucket(relative, stack == "enc", 8, 6)
        table = hf_stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight  # [8, H]
        first = trace[f"{stack}.0.self.bias"]
        assert torch.equal(first, table[buckets].permute(2, 0, 1))  # [H, T, T]
        assert trace.entries[f"{stack}.1.self.bias"].data_ptr() == trace.entries[f"{stack}.0.self.bias"].data_ptr()
        stage = next(s for s in stages_for(trace) if s.key == f"{stack}.1.self.bias")
        view = view_for(trace, stage, ViewState(head=2))
        assert torch.equal(torch.from_numpy(view.buckets.matrix).long(), buckets)
    assert "dec.0.cross.bias" not in trace  # cross-attention has no position bias


def test_no_square_root_as_trained_and_the_page_says_so(converted):
    _case, _model, _hf, config, _state, module = converted
    _, trace = run(module)
    assert trace.options.scale is False
    assert torch.equal(trace["enc.0.self.scaled"], trace["enc.0.self.scores"])
    stage = next(s for s in stages_for(trace) if s.key == "enc.1.self.scaled")
    assert "no ÷ √dₖ (trained so)" in stage.title
    page = explanation_html(stage, trace)
    assert "never divides by √d<sub>k</sub>" in page and "switched off" not in page
    spec = next(s for s in option_rules.specs() if s.field == "scale")
    assert spec.controls[0].unavailable(config, RunOptions()) is not None  # the toggle says why it does nothing
    assert option_rules.departures(config, RunOptions(), lambda: None) == []
    logits_page = explanation_html(next(s for s in stages_for(trace) if s.kind == "logits"), trace)
    assert ("d<sub>model</sub><sup>−½</sup>" in logits_page) is config.output_rescale


def test_toggles_still_run_and_eager_equals_lazy(converted):
    _case, _model, _hf, config, _state, module = converted
    base, lazy = run(module)
    _, eager = run(module, eager=True)
    for name in ("enc.1.self.masked", "dec.1.self.weights", "dec.1.cross.weights", "dec.0.self.biased"):
        assert torch.allclose(lazy[name], eager[name], atol=1e-5), name
    with torch.inference_mode():
        fused = module(torch.tensor([IDS]), torch.tensor([DEC_IDS]))
    # the recorded attention is row-stable (engine/row_stable.py), the fast path fused: float32 rounding, relative
    # to the logits' size (t5-v1.1's reach 6.5; on one thread they differed by 1.9e-5)
    assert float((fused - base).abs().max()) <= 1e-5 * max(1.0, float(base.abs().max()))
    for options in (RunOptions(norm="post"), RunOptions(positional=False), RunOptions(residual=False)):
        logits, _ = run(module, options.validate(config))
        assert torch.isfinite(logits).all() and not torch.allclose(logits, base), options
    assert RunOptions(n_heads=2).problems(config)  # one learned bias column per trained head


@pytest.mark.parametrize(
    ("change", "field"),
    [({"d_kv": 4}, "d_kv"), ({"feed_forward_proj": "gated-gelu-x"}, "feed_forward_proj")],
)
def test_what_attnlab_cannot_build_is_refused_naming_the_field(change, field):
    _model, hf_config = t5()
    with pytest.raises(CheckpointError) as refused:
        config_from_hf({**hf_config, **change})
    assert field in str(refused.value) and "\n" not in str(refused.value)
