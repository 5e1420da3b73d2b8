"""Mixtral's sparse mixture of experts against transformers (tiny random models from hf_tiny_moe.py): the router
stage's numbers are transformers' router_logits (output_router_logits=True), softmax, top-k and renormalised
weights; both weight layouts (the Hub's per-expert w1/w2/w3, transformers 5's fused gate_up_proj) load alike;
the stage, its panel and its page show the run's router. The whole-model agreement (ids, attention, hidden
states, logits) is test_hf_families.py's, over family_cases.FAMILY_CASES."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from safetensors.torch import load_file

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine import names
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder, finish
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import MOE, ViewState, stages_for
from attnlab.present.views.moe import MoEView
from tests.support.hf_tiny import IDS
from tests.support.hf_tiny_moe import mixtral

TOL = 1e-4


def recorded(config, state, options: RunOptions | None = None):
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    rec = Recorder(True)
    rec.tokens(names.side_entry("tgt", "tokens"), [f"#{i}" for i in IDS])  # what the stage list reads
    with torch.inference_mode():
        logits = module(None, torch.tensor([IDS]), options=options or RunOptions(), rec=rec)
    return module, logits, finish(rec, config, (options or RunOptions()).resolved(config), "cpu")


@pytest.fixture(scope="module", params=[{}, {"num_experts_per_tok": 1, "num_local_experts": 3}, {"n3": 3}])
def moe(request):
    changes = {"num_experts_per_tok": 3} if "n3" in request.param else request.param
    model, hf_config = mixtral(**changes)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([IDS]), output_router_logits=True)
    config, state, notes = convert(hf_config, model.state_dict())
    _module, logits, trace = recorded(config, state)
    return model, hf_config, out, config, state, logits, trace


def test_the_router_is_transformers_router(moe):
    _model, _hf, out, config, _state, logits, trace = moe
    assert config.n_experts == len(out.router_logits[0][0]) and len(out.router_logits) == config.n_decoder_layers
    for i, theirs in enumerate(out.router_logits):  # [T, E] per layer (batch and positions flattened)
        ffn = names.ffn(names.layer("dec", i))
        ours = trace[f"{ffn}.router_logits"]
        assert ours.shape == theirs.shape
        assert float((ours - theirs).abs().max()) <= TOL
        probs = torch.softmax(theirs.float(), dim=-1)
        assert float((trace[f"{ffn}.router_probs"] - probs).abs().max()) <= TOL
        top, chosen = torch.topk(probs, config.experts_per_token, dim=-1)
        assert torch.equal(trace[f"{ffn}.chosen"], chosen)
        weights = top / top.sum(dim=-1, keepdim=True)
        assert float((trace[f"{ffn}.expert_weights"] - weights).abs().max()) <= TOL
        torch.testing.assert_close(trace[f"{ffn}.expert_weights"].sum(-1), torch.ones(len(IDS)))
    assert float((logits[0] - out.logits[0]).abs().max()) <= TOL


def test_the_hubs_per_expert_layout_loads_the_same_weights(moe, tmp_path):
    model, hf_config, _out, config, state, _logits, _trace = moe
    model.save_pretrained(tmp_path)  # transformers writes the Hub layout: block_sparse_moe.experts.<e>.w1 …
    saved = load_file(tmp_path / "model.safetensors")
    assert any(".block_sparse_moe.experts.0.w1.weight" in k for k in saved)
    hub_config = json.loads((tmp_path / "config.json").read_text())
    config2, state2, notes = convert(hub_config, saved)
    assert config2 == config and not notes
    assert state2.keys() == state.keys()
    assert all(torch.equal(state2[k], state[k]) for k in state)


def test_the_fast_path_gives_the_recorded_logits(moe):
    _model, _hf, out, config, state, logits, _trace = moe
    module = Transformer(config)
    module.load_state_dict(state)
    with torch.inference_mode():
        fast = module.eval()(None, torch.tensor([IDS]))
    # the recorded attention sums its keys in fixed groups (engine/row_stable.py), the fast path takes the fused
    # kernel: the same function, to float32 rounding (grown through the routers), relative to the logits' size
    assert float((fast - logits).abs().max()) <= 1e-6 * max(1.0, float(logits.abs().max())) * 10


def test_the_stage_draws_the_routers_probabilities_and_choices(moe):
    _model, _hf, out, config, _state, _logits, trace = moe
    stages = [s for s in stages_for(trace) if s.kind == MOE]
    assert [s.key for s in stages] == [names.ffn(names.layer("dec", i)) for i in range(config.n_decoder_layers)]
    assert not any(s.kind == "ffn" for s in stages_for(trace))
    for stage, theirs in zip(stages, out.router_logits, strict=True):
        view = view_for(trace, stage, ViewState())
        assert isinstance(view, MoEView)
        probs = torch.softmax(theirs.float(), dim=-1).numpy()
        np.testing.assert_allclose(view.router.matrix, probs, atol=TOL)
        chosen = torch.topk(torch.from_numpy(probs), config.experts_per_token, dim=-1).indices.numpy()
        expected = np.zeros_like(view.chosen)
        expected[np.arange(len(IDS))[:, None], chosen] = True
        np.testing.assert_array_equal(view.chosen, expected)
        np.testing.assert_allclose(view.weights.sum(axis=1), 1.0, atol=1e-6)
        assert len(view.marks) == len(IDS) * config.experts_per_token and sum(view.load) == len(view.marks)
        page = explanation_html(stage, trace)
        assert "softmax(x W<sub>router</sub>)" in page and f"the {config.experts_per_token} experts" in page


def test_the_panel_shows_exactly_the_router(qapp, moe):
    from attnlab.ui.stages import panel_class_for

    _model, _hf, _out, config, _state, _logits, trace = moe
    stage = next(s for s in stages_for(trace) if s.kind == MOE)
    panel = panel_class_for(MOE)()
    panel.show_stage(trace, stage, ViewState())
    data = panel.shown_data()
    np.testing.assert_array_equal(data["router"]["matrix"], trace[f"{stage.layer}.ffn.router_probs"].numpy())
    np.testing.assert_array_equal(data["out"]["matrix"], trace[f"{stage.layer}.ffn.out"].numpy())
    weights = trace[f"{stage.layer}.ffn.expert_weights"].numpy()
    assert sorted(data["marks"]) == sorted(f"● {w:.0%}" for w in weights.ravel())
    chosen = trace[f"{stage.layer}.ffn.chosen"].numpy()  # [T, k]: every chosen cell is outlined, nothing else
    assert sorted(data["outlined"]) == sorted((r, int(e)) for r, row in enumerate(chosen) for e in row)
    panel.close()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_experts_per_tok": 5}, "num_experts_per_tok"),
        ({"num_experts_per_tok": 0}, "num_experts_per_tok"),
        ({"num_local_experts": 0}, "num_local_experts"),
        ({"mlp_bias": True}, "mlp_bias"),
    ],
)
def test_expert_settings_attnlab_cannot_represent_are_refused(changes, field):
    _model, hf_config = mixtral()
    with pytest.raises(CheckpointError) as refused:
        config_from_hf({**hf_config, **changes})
    message = str(refused.value)
    assert f"'{field}'" in message and "\n" not in message


def test_a_config_without_a_rotary_base_uses_mixtrals_default():
    _model, hf_config = mixtral()
    bare = {k: v for k, v in hf_config.items() if k not in ("rope_parameters", "rope_scaling", "rope_theta")}
    assert config_from_hf(bare).rope_theta == 1_000_000.0
    assert config_from_hf({**bare, "rope_theta": 5e5}).rope_theta == 5e5


# ---- Falcon ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"alibi": True}, "alibi"),
        ({"new_decoder_architecture": True, "parallel_attn": False}, "parallel_attn"),
        ({"new_decoder_architecture": True, "num_kv_heads": 3}, "num_kv_heads"),
        ({"new_decoder_architecture": True, "num_ln_in_parallel_attn": 3}, "num_ln_in_parallel_attn"),
        ({"multi_query": False, "num_kv_heads": 2}, "num_kv_heads"),
        ({"activation": "gelu_fast"}, "activation"),
    ],
)
def test_falcon_settings_attnlab_cannot_represent_are_refused(changes, field):
    from tests.support.hf_tiny_moe import falcon

    _model, hf_config = falcon()
    with pytest.raises(CheckpointError) as refused:
        config_from_hf({**hf_config, **changes})
    message = str(refused.value)
    assert f"'{field}'" in message and "\n" not in message


@pytest.mark.parametrize(
    ("changes", "kv_heads", "shared"),
    [
        ({}, 1, True),  # Falcon-7B: multi-query, one LayerNorm for both branches
        ({"new_decoder_architecture": True, "num_kv_heads": 2}, 2, False),  # Falcon-40B: ln_attn and ln_mlp
        ({"new_decoder_architecture": True, "num_kv_heads": 2, "num_ln_in_parallel_attn": 1}, 2, True),
        ({"multi_query": False}, 4, True),
    ],
)
def test_falcon_layouts_read_as_transformers_builds_them(changes, kv_heads, shared):
    from tests.support.hf_tiny_moe import falcon

    model, hf_config = falcon(**changes)
    config = config_from_hf(hf_config)
    assert (config.kv_heads, config.parallel_residual, config.shared_norm) == (kv_heads, True, shared)
    layer = model.transformer.h[0]
    assert hasattr(layer, "ln_attn") is (not shared)  # transformers built two norms exactly when attnlab reads two
    expected_rows = (config.n_heads + 2 * kv_heads) * config.d_head
    assert layer.self_attention.query_key_value.weight.shape[0] == expected_rows


def test_falcons_old_n_embed_name_and_its_page(tmp_path):
    from tests.support.hf_tiny_moe import falcon

    model, hf_config = falcon(new_decoder_architecture=True, num_kv_heads=2)
    renamed = {("n_embed" if k == "hidden_size" else k): v for k, v in hf_config.items()}
    assert config_from_hf(renamed) == config_from_hf(hf_config)
    config, state, _notes = convert(hf_config, model.state_dict())
    _module, _logits, trace = recorded(config, state)
    stage = next(s for s in stages_for(trace) if s.key == "dec.0.norm1")
    assert "parallel residual" in explanation_html(stage, trace)


def test_the_schematic_names_the_experts_box(qtbot, moe):
    from attnlab.ui.plots.schematic import Schematic

    _model, _hf, _out, config, _state, _logits, trace = moe
    schematic = Schematic()
    qtbot.addWidget(schematic)
    schematic.show()  # a hidden schematic lays out nothing
    qtbot.waitExposed(schematic)
    schematic.set_run(config, trace.options)
    labels = [item.label for item in schematic.items if item.box == names.ffn(names.layer("dec", 0))]
    assert labels == ["Experts (MoE)"]
