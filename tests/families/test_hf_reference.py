"""Hugging Face models opened through attnlab's own engine agree with `transformers`' eager forward: every
layer's per-head attention weights, every hidden state and the logits, to 1e-4 in float32.

The models are tiny and random, built from config objects (nothing is downloaded); their weights are
re-drawn with a wide spread so attention is far from uniform.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import SUPPORTED_MODEL_TYPES, config_from_hf, convert
from attnlab.engine.model import Transformer
from attnlab.engine.options import DEFAULT_OPTIONS, RunOptions
from attnlab.engine.trace import Recorder
from tests.support.hf_tiny import CASES, DEC_IDS, IDS, hf_forward, pairs
from tests.support.recorded import finished

TOL = 1e-4


def attnlab_run(config, state, options: RunOptions = DEFAULT_OPTIONS):
    module = Transformer(config)
    module.load_state_dict(state)  # strict: every tensor the engine needs, nothing else
    module.eval()
    rec = Recorder(True)
    src = torch.tensor([IDS]) if config.has_encoder else None
    tgt = torch.tensor([DEC_IDS if config.has_encoder else IDS]) if config.has_decoder else None
    with torch.inference_mode():
        logits = module(src, tgt, options=options, rec=rec)
    return logits, finished(rec, config, options)


@pytest.fixture(scope="module", params=list(CASES))
def case_run(request):
    case = CASES[request.param]
    model, hf_config = case.build()
    config, state, notes = convert(hf_config, model.state_dict())
    return case, model, hf_config, config, state, notes


def test_every_attention_map_hidden_state_and_logit_agrees(case_run):
    case, model, _hf_config, config, state, _notes = case_run
    out = hf_forward(case, model)
    logits, trace = attnlab_run(config, state)
    n_layers = config.n_decoder_layers if config.has_decoder else config.n_encoder_layers
    checked = 0
    for what, theirs, name in pairs(case, out, n_layers):
        ours = trace[name]
        assert ours.shape == theirs.shape, f"{case.name} {what}: {name} {tuple(ours.shape)} vs {tuple(theirs.shape)}"
        err = float((ours - theirs).abs().max())
        assert err <= TOL, f"{case.name} {what} ({name}) differs by {err:.2e}"
        checked += 1
    assert checked >= 2 * n_layers + 1  # every layer's attention and every hidden state were compared
    if case.has_logits:
        err = float((logits[0] - out.logits[0]).abs().max())
        assert err <= TOL, f"{case.name} logits differ by {err:.2e}"
    else:
        assert float((trace["enc.out"] - out.last_hidden_state[0]).abs().max()) <= TOL


def test_toggles_still_run_on_the_imported_model(case_run):
    case, _model, _hf, config, state, _notes = case_run
    base, _ = attnlab_run(config, state)
    flipped = RunOptions(norm="post" if config.norm_first else "pre")
    other, trace = attnlab_run(config, state, flipped)
    assert torch.isfinite(other).all() and not torch.allclose(other, base)
    for options in (
        RunOptions(scale=False),
        RunOptions(positional=False),
        RunOptions(residual=False),
        RunOptions(n_heads=config.n_heads // 2),
    ):
        logits, _ = attnlab_run(config, state, options.validate(config))
        assert torch.isfinite(logits).all() and not torch.allclose(logits, base), options


def test_grouped_query_attention_keeps_k_and_v_per_kv_head(case_run):
    case, _model, _hf, config, state, _notes = case_run
    if config.kv_heads == config.n_heads:
        pytest.skip("not a grouped-query model")
    _, trace = attnlab_run(config, state)
    d_k = config.d_head
    assert trace["dec.0.self.k"].shape == (config.kv_heads, len(IDS), d_k)
    assert trace["dec.0.self.q"].shape == (config.n_heads, len(IDS), d_k)
    assert trace["dec.0.self.weights"].shape == (config.n_heads, len(IDS), len(IDS))
    # a re-split to 8 Q heads reads the K/V weights as 4 K/V heads; 1 Q head would need half a K/V head
    assert not RunOptions(n_heads=8).problems(config)
    assert any("K/V" in p for p in RunOptions(n_heads=1).problems(config))
    _, resplit = attnlab_run(config, state, RunOptions(n_heads=8))
    assert resplit["dec.0.self.k"].shape == (2 * config.kv_heads, len(IDS), d_k // 2)


def test_config_from_hf_needs_no_weights(case_run):
    _case, _model, hf_config, config, _state, _notes = case_run
    assert config_from_hf(hf_config) == config


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"model_type": "reformer"}, "model_type"),
        ({"model_type": None}, "model_type"),
        ({"rope_parameters": None, "rope_scaling": {"rope_type": "longrope", "factor": 2.0}}, "rope_scaling"),
        ({"rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, "factor": 4.0}}, "rope_parameters"),
        ({"model_type": "qwen2", "use_sliding_window": True}, "use_sliding_window"),
        ({"hidden_act": "gelu_fast"}, "hidden_act"),
        ({"head_dim": 0}, "head_dim"),  # w-headdim: head_dim 4 opens now (tests/families/test_head_dim.py)
    ],
)
def test_unsupported_settings_are_refused_naming_the_field(changes, field):
    from tests.support.hf_tiny import llama

    _model, hf_config = llama()
    hf_config = {**hf_config, **changes}
    with pytest.raises(CheckpointError) as err:
        config_from_hf(hf_config)
    message = str(err.value)
    assert repr(field) in message and "\n" not in message and message.count("config.json") == 1
    listed = all(t in message for t in SUPPORTED_MODEL_TYPES)
    assert listed is (field == "model_type")  # the supported types only where the type itself is refused


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_a_tied_output_that_differs_from_the_embeddings_is_refused(family):
    from tests.support.hf_tiny import CASES as cases

    model, hf_config = cases[family].build()
    state = dict(model.state_dict())
    key = "lm_head.weight" if family == "gpt2" else "cls.predictions.decoder.weight"
    state[key] = state[key].clone() + 1.0
    with pytest.raises(CheckpointError, match="tie_word_embeddings"):
        convert(hf_config, state)


def test_unused_tensors_are_noted_and_missing_ones_named():
    from tests.support.hf_tiny import CASES as cases

    model, hf_config = cases["bert-no-head"].build()
    _config, _state, notes = convert(hf_config, model.state_dict())
    assert any("pooler.dense.weight" in n for n in notes) and any("masked-LM head" in n for n in notes)
    state = dict(model.state_dict())
    del state["encoder.layer.1.output.dense.weight"]
    with pytest.raises(CheckpointError, match=r"encoder\.layer\.1\.output\.dense\.weight"):
        convert(hf_config, state)


def test_a_config_json_written_by_older_transformers_reads_the_same():
    """Folders saved by transformers 4.x carry rope_theta / rope_scaling instead of rope_parameters."""
    from tests.support.hf_tiny import llama

    _model, hf_config = llama()
    old_style = {k: v for k, v in hf_config.items() if k != "rope_parameters"}
    old_style.update(rope_theta=500.0, rope_scaling=None)
    assert config_from_hf(old_style) == config_from_hf(hf_config)
    assert config_from_hf(old_style).rope_theta == 500.0
