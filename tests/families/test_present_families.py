"""The pages of the decoder-family mechanisms state the arithmetic the engine ran (Qt-free): rope scaling in
the Q, K, V page's formula with the model's own numbers, GPT-2's inverse layer scaling in the ÷√dₖ stage."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.present.explain import explanation_html
from attnlab.present.stages import stages_for

ROTARY = dict(positional="rotary", rotary_layout="half", n_kv_heads=2, scale_embedding=False)


def trace_of(options: RunOptions | None = None, **changes):
    torch.manual_seed(0)
    tok = WordTokenizer.train(["the black cat sees the small dog"])
    cfg = ModelConfig(
        arch="decoder-only",
        src_vocab_size=tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=0,
        n_decoder_layers=3,
        max_len=32,
        **{"norm_first": True, **changes},
    )
    trace = LiveModel(Transformer(cfg), tok, tok).trace(None, "the black cat", options or RunOptions())
    return trace, {s.key: s for s in stages_for(trace)}


@pytest.mark.parametrize(
    ("scaling", "said"),
    [
        ({"rope_scaling": "linear", "rope_factor": 4.0}, ["linear scaling, s = 4", "/ s"]),
        ({"rope_scaling": "dynamic", "rope_factor": 2.0}, ["dynamic NTK scaling, s = 2", "= 32"]),
        (
            {"rope_scaling": "llama3", "rope_factor": 8.0, "rope_original_max_len": 64},
            ["Llama 3 scaling, s = 8, N = 64", "N / 4", "N / 1"],
        ),
        (
            {"rope_scaling": "yarn", "rope_factor": 4.0, "rope_original_max_len": 16, "rope_attention_factor": 1.1386},
            ["YaRN scaling, s = 4, N = 16", "× 1.139", "β<sub>fast</sub> = 32"],
        ),
    ],
)
def test_the_qkv_page_states_the_rope_scaling_with_the_models_numbers(scaling, said):
    trace, stages = trace_of(**ROTARY, **scaling)
    page = explanation_html(stages["dec.0.self.qkv"], trace)
    assert all(s in page for s in said), page
    plain, plain_stages = trace_of(**ROTARY)
    assert "scaling" not in explanation_html(plain_stages["dec.0.self.qkv"], plain)


def test_positions_switched_off_drop_the_scaling_formula():
    trace, stages = trace_of(RunOptions(positional=False), **ROTARY, rope_scaling="linear", rope_factor=4.0)
    assert "linear scaling" not in explanation_html(stages["dec.0.self.qkv"], trace)


def test_inverse_layer_scaling_is_in_each_layers_scaled_stage():
    trace, stages = trace_of(attn_scale_inverse_layer=True)
    for layer in range(3):
        stage = stages[f"dec.{layer}.self.scaled"]
        assert stage.title.endswith(f"QKᵀ / (√dₖ · {layer + 1})"), stage.title
        page = explanation_html(stage, trace)
        assert f"Q Kᵀ / (√d<sub>k</sub> · {layer + 1})" in page and f"here by {layer + 1}" in page
        scores, scaled = trace[f"dec.{layer}.self.scores"], trace[f"dec.{layer}.self.scaled"]
        assert torch.allclose(scaled, scores / (8**0.5 * (layer + 1)))  # d_k = 32 / 4 = 8
    off, off_stages = trace_of(RunOptions(scale=False), attn_scale_inverse_layer=True)
    assert "switched off" in off_stages["dec.1.self.scaled"].title
    assert torch.equal(off["dec.1.self.scaled"], off["dec.1.self.scores"])
    plain, plain_stages = trace_of()
    assert "(l + 1)" not in explanation_html(plain_stages["dec.1.self.scaled"], plain)


def test_the_mask_stage_states_the_sliding_window_band():
    trace, stages = trace_of(sliding_window=2)
    page = explanation_html(stages["dec.0.self.mask"], trace)
    assert "j ≤ i and i − j &lt; W (sliding window W = 2)" in page and "band of width 2" in page
    mask = trace["dec.0.self.mask"]  # [T, T]: 3 tokens and the start token at least
    assert torch.isneginf(mask[2, 0]) and mask[2, 1] == 0 and mask[1, 0] == 0
    plain, plain_stages = trace_of()
    assert "sliding window" not in explanation_html(plain_stages["dec.0.self.mask"], plain)


def test_partial_rotary_is_in_the_formula_and_only_the_first_dimensions_turn():
    trace, stages = trace_of(**ROTARY, rotary_fraction=0.5)
    page = explanation_html(stages["dec.0.self.qkv"], trace)
    assert "only the first r = 0.5 · d<sub>k</sub> dimensions" in page
    off, _ = trace_of(RunOptions(positional=False), **ROTARY, rotary_fraction=0.5)
    q, unturned = trace["dec.0.self.q"], off["dec.0.self.q"]  # [H, T, 8]: dims 4 … 7 never turn
    assert torch.equal(q[..., 4:], unturned[..., 4:]) and not torch.allclose(q[..., :4], unturned[..., :4])


def test_a_non_parametric_layernorm_says_it_learns_nothing():
    trace, stages = trace_of(norm_affine=False, norm_bias=False, norm_first=True)
    page = explanation_html(stages["dec.0.norm1"], trace)
    assert "(x − μ) / √(σ² + ε)" in page and "no γ, no β" in page and "γ ⊙" not in page.split("</p>")[0]


def test_a_parallel_residual_layer_reads_one_input_and_its_formula_says_so():
    from attnlab.engine import names

    trace, stages = trace_of(parallel_residual=True)
    x = trace[names.side_entry("tgt", "input")]  # [T, d]: layer 0's input
    assert torch.equal(trace[names.norm_entry(names.norm("dec.0", 2), "in")], x)  # the FFN's norm reads x too
    ffn_out = trace[names.ffn_entry("dec.0", "out")]
    resid1, resid2 = trace[names.resid("dec.0", 1)], trace[names.resid("dec.0", 2)]
    assert torch.allclose(resid2, resid1 + ffn_out) and torch.equal(trace[names.layer_out("dec.0")], resid2)
    page = explanation_html(stages["dec.0.norm2"], trace)
    assert "y = x + Attn(LN<sub>1</sub>(x)) + FFN(LN<sub>2</sub>(x))" in page
    plain, plain_stages = trace_of()
    assert "parallel" not in explanation_html(plain_stages["dec.0.norm2"], plain)


def test_phi_shares_one_norm_between_the_parallel_branches():
    from attnlab.engine import names

    trace, stages = trace_of(parallel_residual=True, shared_norm=True)
    page = explanation_html(stages["dec.0.norm2"], trace)
    assert "y = x + Attn(LN(x)) + FFN(LN(x))" in page and "one LN shared by both" in page
    norm1, norm2 = (trace[names.norm_entry(names.norm("dec.0", n), "out")] for n in (1, 2))
    assert torch.equal(norm1, norm2)  # the FFN reads the very output the attention read


@pytest.mark.parametrize("family", ["mistral", "gpt_neox", "phi", "gemma", "opt-post-norm", "llama-rope-yarn"])
def test_every_stage_of_an_imported_family_has_its_page(family):
    """The families' converted models run through LiveModel and every stage's page renders from the trace."""
    pytest.importorskip("transformers")
    from attnlab.checkpoints.hf import convert
    from tests.support.family_cases import FAMILY_CASES

    case, _ = FAMILY_CASES[family]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    tok = WordTokenizer.train(["the black cat sees the small dog and the big bird"])
    trace = LiveModel(module.eval(), tok, tok).trace(None, "the black cat sees the small dog", RunOptions())
    stages = stages_for(trace)
    assert len(stages) > 20
    for stage in stages:
        page = explanation_html(stage, trace)
        assert page.startswith("<h3>") and "No explanation" not in page and "not in this run" not in page, stage.key
