"""Decoder families and mechanisms beyond the first seven agree with `transformers`' eager forward: every
layer's per-head attention weights, every hidden state and the logits, to 1e-4 in float32
(family_cases.FAMILY_CASES: rope scaling on Llama and Qwen2, GPT-2's inverse-layer scaling, Mistral, Phi-3,
Gemma, StableLM, OLMo, GPT-NeoX, Phi, GPT-J, OPT)."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.positional import rotary_inv_freq
from attnlab.engine.trace import Recorder, finish
from tests.support.family_cases import FAMILY_CASES
from tests.support.hf_tiny import DEC_IDS, IDS, compare_with_hf

TOL = 1e-4


@pytest.fixture(scope="module", params=list(FAMILY_CASES))
def family(request):
    case, _mechanisms = FAMILY_CASES[request.param]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    return case, model, hf_config, config, state


def run(config, state, options: RunOptions | None = None):
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    rec = Recorder(True)
    with torch.inference_mode():
        src = torch.tensor([IDS]) if config.has_encoder else None  # an encoder-decoder reads IDS, decodes DEC_IDS
        tgt = torch.tensor([DEC_IDS if config.has_encoder else IDS]) if config.has_decoder else None
        logits = module(src, tgt, options=options or RunOptions(), rec=rec)
    return logits, finish(rec, config, (options or RunOptions()).resolved(config), "cpu")


def test_every_attention_map_hidden_state_and_logit_agrees(family):
    case, model, _hf, config, state = family
    errors = compare_with_hf(case, model, config, state)
    assert len(errors) >= 2 * config.n_decoder_layers + 2  # every layer's attention, every hidden state, logits
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOL, f"{case.name} {worst} differs by {errors[worst]:.2e}"


def test_config_from_hf_needs_no_weights(family):
    _case, _model, hf_config, config, _state = family
    assert config_from_hf(hf_config) == config


def resplit_heads(config) -> int:
    """Half the heads; twice as many where halving would cut a shared K/V head apart (multi-query Falcon)."""
    half = config.n_heads // 2
    return half if (half * config.kv_heads) % config.n_heads == 0 else 2 * config.n_heads


def test_toggles_still_run(family):
    _case, _model, _hf, config, state = family
    base, _ = run(config, state)
    post = RunOptions(norm="post" if config.norm_first else "pre")  # the other placement
    if config.parallel_residual:  # no post-norm form of a parallel block: refused with its reason
        assert any("parallel residual" in p for p in post.problems(config))
    for options in (
        *([] if config.parallel_residual else [post]),
        RunOptions(scale=False),
        RunOptions(positional=False),
        RunOptions(n_heads=resplit_heads(config)),
    ):
        logits, _ = run(config, state, options.validate(config))
        assert torch.isfinite(logits).all() and not torch.allclose(logits, base), options


@pytest.mark.parametrize("name", ["llama-rope-linear", "llama-rope-llama3", "llama-rope-yarn", "qwen2-yarn"])
def test_the_scaled_inverse_frequencies_are_transformers_own(name):
    """attnlab's rotation speeds equal the buffer transformers computed, and differ from plain rotary's."""
    case, _ = FAMILY_CASES[name]
    model, hf_config = case.build()
    config = config_from_hf(hf_config)
    theirs = model.model.rotary_emb.inv_freq
    ours = rotary_inv_freq(config.d_head, config.rope_theta, config)
    assert torch.allclose(ours, theirs, rtol=1e-6, atol=0), (ours, theirs)
    assert not torch.allclose(ours, rotary_inv_freq(config.d_head, config.rope_theta))
    assert config.rope_attention_factor == pytest.approx(model.model.rotary_emb.attention_scaling)


def test_yarn_attention_factor_is_recorded_in_q_and_k():
    """Qwen2.5's yarn multiplies cos and sin by 0.1 ln(s) + 1: the rotated q has that much more length."""
    case, _ = FAMILY_CASES["qwen2-yarn"]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    assert config.rope_attention_factor == pytest.approx(0.1 * math.log(4.0) + 1.0)
    _, trace = run(config, state)
    plain = config.__class__(**{**config.__dict__, "rope_attention_factor": 1.0})
    _, unscaled = run(plain, state)
    ratio = trace["dec.0.self.q"].norm() / unscaled["dec.0.self.q"].norm()
    assert float(ratio) == pytest.approx(config.rope_attention_factor, rel=1e-5)


def test_inverse_layer_scaling_divides_each_layer_by_its_number():
    case, _ = FAMILY_CASES["gpt2-inverse-layer"]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    assert config.attn_scale_inverse_layer
    _, trace = run(config, state)
    d_k = config.d_head
    for layer in range(config.n_decoder_layers):
        scores, scaled = trace[f"dec.{layer}.self.scores"], trace[f"dec.{layer}.self.scaled"]
        assert torch.allclose(scaled, scores / (math.sqrt(d_k) * (layer + 1)), atol=1e-6)
    # a run without recording (the fused kernel) gives the same logits
    module = Transformer(config)
    module.load_state_dict(state)
    with torch.inference_mode():
        fused = module(None, torch.tensor([IDS]))
    recorded, _ = run(config, state)
    assert torch.allclose(fused, recorded, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("rope", "field"),
    [
        ({"rope_type": "longrope", "rope_theta": 500.0, "factor": 2.0}, "rope_parameters"),
        ({"rope_type": "linear", "rope_theta": 500.0}, "rope_parameters"),  # no factor
        ({"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0}, "rope_parameters"),
    ],
)
def test_rope_settings_attnlab_cannot_compute_are_refused_naming_the_field(rope, field):
    case, _ = FAMILY_CASES["llama-rope-linear"]
    _model, hf_config = case.build()
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config, "rope_parameters": rope})
    assert repr(field) in str(err.value) and "\n" not in str(err.value)


def test_old_style_rope_scaling_reads_the_same():
    """transformers 4.x wrote rope_theta + rope_scaling {type, factor}; 5.x writes rope_parameters."""
    case, _ = FAMILY_CASES["llama-rope-linear"]
    _model, hf_config = case.build()
    old = {k: v for k, v in hf_config.items() if k != "rope_parameters"}
    old.update(rope_theta=500.0, rope_scaling={"type": "linear", "factor": 4.0})
    assert config_from_hf(old) == config_from_hf(hf_config)


def test_sliding_window_masks_a_band_and_the_fused_run_agrees():
    case, _ = FAMILY_CASES["mistral"]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    assert config.sliding_window == 3
    _, trace = run(config, state)
    T = len(IDS)
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    allowed = (j <= i) & (i - j < 3)  # [T, T]
    for layer in range(config.n_decoder_layers):
        mask = trace[f"dec.{layer}.self.mask"]  # [T, T]
        assert torch.equal(mask == 0, allowed) and torch.isneginf(mask[~allowed]).all()
        assert (trace[f"dec.{layer}.self.weights"][:, ~allowed] == 0).all()
    module = Transformer(config)
    module.load_state_dict(state)
    with torch.inference_mode():
        fused = module(None, torch.tensor([IDS]))  # no recording: the fused kernel, given the band
    recorded, _ = run(config, state)
    assert torch.allclose(fused, recorded, atol=1e-5, rtol=1e-5)
    # without the window the logits differ: the band changed what the model computed
    full = config.__class__(**{**config.__dict__, "sliding_window": 0})
    assert not torch.allclose(run(full, state)[0], recorded, atol=1e-3)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"layer_types": ["full_attention", "sliding_attention"]}, "layer_types"),
        ({"layer_types": ["chunked_attention", "chunked_attention"]}, "layer_types"),
        ({"sliding_window": 0}, "sliding_window"),
    ],
)
def test_window_settings_attnlab_cannot_represent_are_refused(changes, field):
    case, _ = FAMILY_CASES["mistral"]
    _model, hf_config = case.build()
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config, **changes})
    assert repr(field) in str(err.value)
