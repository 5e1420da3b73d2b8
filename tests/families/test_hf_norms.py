"""The families whose new parts are norms (w-norms; hf_tiny_norms.FAMILY_CASES) agree with `transformers`' eager
forward (every layer's attention weights, hidden states, logits ≤ 1e-4 in float32), and their new steps are drawn
with the numbers transformers' own modules compute: QK-norm (Qwen3)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stages_for
from tests.support.hf_tiny import IDS, compare_with_hf
from tests.support.hf_tiny_norms import NORMS_CASES as FAMILY_CASES

TOL = 1e-4
TEXT = "the black cat sees the small dog"


@pytest.fixture(scope="module", params=list(FAMILY_CASES))
def family(request):
    case, _mechanisms = FAMILY_CASES[request.param]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    return case, model, hf_config, config, state


def built(name: str):
    case, _ = FAMILY_CASES[name]
    model, hf_config = case.build()
    config, state, _ = convert(hf_config, model.state_dict())
    return model, hf_config, config, state


def module_of(config, state) -> Transformer:
    module = Transformer(config)
    module.load_state_dict(state)
    return module.eval()


def live_trace(config, state, options: RunOptions | None = None):
    """A LiveModel trace (tokens, stages) of TEXT with a word tokenizer whose ids fit the tiny vocabulary."""
    tok = WordTokenizer.train([TEXT])
    trace = LiveModel(module_of(config, state), tok, tok).trace(None, TEXT, options or RunOptions())
    return trace, {s.key: s for s in stages_for(trace)}


def test_every_attention_map_hidden_state_and_logit_agrees(family):
    case, model, _hf, config, state = family
    errors = compare_with_hf(case, model, config, state)
    assert len(errors) >= 2 * config.n_decoder_layers + 2
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOL, f"{case.name} {worst} differs by {errors[worst]:.2e}"


def test_config_from_hf_needs_no_weights(family):
    _case, _model, hf_config, config, _state = family
    assert config_from_hf(hf_config) == config


def test_the_fast_path_agrees_with_the_recorded_run(family):
    """A run that records nothing (fused kernel) gives the recorded run's logits."""
    _case, _model, _hf, config, state = family
    module = module_of(config, state)
    from attnlab.engine.trace import Recorder

    with torch.inference_mode():
        fast = module(None, torch.tensor([IDS]))
        recorded = module(None, torch.tensor([IDS]), rec=Recorder(True))
    assert torch.allclose(fast, recorded, atol=1e-5)


# ---- QK-norm (Qwen3) -----------------------------------------------------------------------------------------
def test_qwen3_qk_norm_stage_shows_transformers_own_normed_q_and_k():
    model, _hf, config, state = built("qwen3")
    assert config.qk_norm == "head"
    trace, stages = live_trace(config, state)
    hf_attn = model.model.layers[1].self_attn
    x = trace["dec.1.norm1.out"].clone()  # [T, d]: what the projections read (a trace holds the first sequence)
    with torch.no_grad():
        q = hf_attn.q_norm(hf_attn.q_proj(x).view(len(x), -1, 8)).transpose(0, 1)  # [H, T, 8]
        k = hf_attn.k_norm(hf_attn.k_proj(x).view(len(x), -1, 8)).transpose(0, 1)  # [H_kv, T, 8]
    stage = stages["dec.1.self.qk_norm"]
    for head in range(config.n_heads):
        view = view_for(trace, stage, ViewState(head=head))
        kv = head // 2  # 4 Q heads share 2 K/V heads
        assert torch.allclose(torch.from_numpy(view.q_normed.matrix), q[head], atol=1e-5)
        assert torch.allclose(torch.from_numpy(view.k_normed.matrix), k[kv], atol=1e-5)
        with torch.no_grad():
            raw = hf_attn.q_proj(x).view(len(x), -1, 8)[:, head]  # [T, 8]
        assert torch.allclose(torch.from_numpy(view.q_in.matrix), raw, atol=1e-5)
        rms = raw.pow(2).mean(-1).add(config.layer_norm_eps).sqrt()
        assert torch.allclose(torch.from_numpy(view.rms[0]).float(), rms, atol=1e-5)
    # the stage comes before Q, K, V (computation order: project, norm, rotate)
    keys = list(stages)
    assert keys.index("dec.1.self.qk_norm") + 1 == keys.index("dec.1.self.qkv")


def test_qwen3_pages_state_the_qk_norm_with_the_models_sizes():
    _model, _hf, config, state = built("qwen3")
    trace, stages = live_trace(config, state)
    page = explanation_html(stages["dec.0.self.qk_norm"], trace)
    assert "d<sub>k</sub> = 8 numbers of each head" in page and f"ε = {config.layer_norm_eps:g}" in page
    assert "QK-norm" in explanation_html(stages["dec.0.self.qkv"], trace)


def test_qwen3_toggles_still_run_and_the_head_re_split_norms_the_trained_heads():
    _model, _hf, config, state = built("qwen3")
    base, _ = live_trace(config, state)
    for options in (RunOptions(n_heads=2), RunOptions(positional=False), RunOptions(projections=False)):
        trace, stages = live_trace(config, state, options.validate(config))
        assert torch.isfinite(trace["logits"]).all() and not torch.allclose(trace["logits"], base["logits"])
    trace, stages = live_trace(config, state, RunOptions(n_heads=2))
    q_in = trace["dec.0.self.q_in"]  # [2 heads, T, 16]: each run head holds two trained heads of 8
    gamma = state["decoder.0.self_attn.qk_norm.q_norm.weight"]
    halves = q_in.unflatten(-1, (2, 8))  # [2, T, 2, 8]
    expected = halves * torch.rsqrt(halves.pow(2).mean(-1, keepdim=True) + config.layer_norm_eps) * gamma
    assert torch.allclose(trace["dec.0.self.q_normed"], expected.flatten(-2), atol=1e-6)
    off, off_stages = live_trace(config, state, RunOptions(projections=False))
    assert "no QK-norm" in explanation_html(off_stages["dec.0.self.qk_norm"], off)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"head_dim": 0}, "head_dim"),  # w-headdim: another head_dim opens now; 0 is no head size
        ({"layer_types": ["full_attention", "sliding_attention"], "sliding_window": 4}, "layer_types"),
    ],
)
def test_qwen3_settings_attnlab_cannot_represent_are_refused(changes, field):
    _model, hf_config = FAMILY_CASES["qwen3"][0].build()
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config, **changes})
    assert repr(field) in str(err.value) and "\n" not in str(err.value)


def test_the_qk_norm_panel_draws_the_views_numbers(qapp):
    from attnlab.ui.stages import panel_class_for

    _model, _hf, config, state = built("qwen3")
    trace, stages = live_trace(config, state)
    panel = panel_class_for("qk_norm")()
    try:
        panel.show_stage(trace, stages["dec.0.self.qk_norm"], ViewState(head=3))
        data = panel.shown_data()
        assert data["head"] == 3 and data["kv_head"] == 1
        for part in ("q_in", "q_normed"):
            assert (data[part]["matrix"] == trace[f"dec.0.self.{part}"][3].numpy()).all()
        for part in ("k_in", "k_normed"):
            assert (data[part]["matrix"] == trace[f"dec.0.self.{part}"][1].numpy()).all()
    finally:
        panel.close()
        panel.deleteLater()


# ---- OLMo-2: QK-norm over all of Q and K, the norm on each sub-layer's output -----------------------------------
def test_olmo2_qk_norm_is_over_the_whole_q_and_k_as_transformers_computes_it():
    model, _hf, config, state = built("olmo2")
    assert config.qk_norm == "whole" and config.sublayer_norm == "output"
    trace, stages = live_trace(config, state)
    hf_attn = model.model.layers[0].self_attn
    x = trace["dec.0.self.q_in"].transpose(0, 1).flatten(1).clone()  # [T, d]: the projection, heads side by side
    with torch.no_grad():
        x_in = model.model.embed_tokens(torch.as_tensor(trace["tgt.ids"]))  # [T, d]: layer 0 reads the embeddings
        q = hf_attn.q_norm(hf_attn.q_proj(x_in))  # [T, 32]: one RMS over all 4 heads
        k = hf_attn.k_norm(hf_attn.k_proj(x_in))  # [T, 16]
    assert torch.allclose(x, hf_attn.q_proj(x_in).detach(), atol=1e-5)
    for head in range(config.n_heads):
        view = view_for(trace, stages["dec.0.self.qk_norm"], ViewState(head=head))
        assert torch.allclose(torch.from_numpy(view.q_normed.matrix), q[:, 8 * head : 8 * head + 8], atol=1e-5)
        kv = head // 2
        assert torch.allclose(torch.from_numpy(view.k_normed.matrix), k[:, 8 * kv : 8 * kv + 8], atol=1e-5)
        whole_rms = x.pow(2).mean(-1).add(config.layer_norm_eps).sqrt()  # [T]: over all 32 numbers
        assert torch.allclose(torch.from_numpy(view.rms[0]).float(), whole_rms, atol=1e-5)
    page = explanation_html(stages["dec.0.self.qk_norm"], trace)
    assert "all 32 numbers of a token's Q (K: 16)" in page


def test_olmo2_add_and_norm_shows_the_norm_on_the_sublayers_output():
    model, _hf, config, state = built("olmo2")
    trace, stages = live_trace(config, state)
    assert trace.options.output_norm
    layer = model.model.layers[1]
    for n, (sub, hf_norm) in enumerate(
        (("dec.1.self.out", layer.post_attention_layernorm), ("dec.1.ffn.out", layer.post_feedforward_layernorm)), 1
    ):
        view = view_for(trace, stages[f"dec.1.norm{n}"], ViewState())
        assert view.placement == "output"
        f_x = trace[sub]  # [T, d]: the sub-layer's output is what the norm reads
        with torch.no_grad():
            normed = hf_norm(f_x.clone())
        x = trace["dec.0.out"] if n == 1 else trace["dec.1.resid1"]
        slots = [torch.from_numpy(s.matrix) for s in view.slots]
        assert torch.equal(slots[0], f_x)
        assert torch.allclose(slots[1], normed, atol=1e-5)
        assert torch.allclose(slots[2], x + normed, atol=1e-5)
        assert "x + RMSNorm(" in view.heading.text
        page = explanation_html(stages[f"dec.1.norm{n}"], trace)
        assert "y = x + RMSNorm(F(x))" in page and "Pre-norm" not in page


def test_olmo2_norm_toggle_moves_the_norms_and_says_it_departs():
    from attnlab.engine import option_rules

    _model, _hf, config, state = built("olmo2")
    base, _ = live_trace(config, state)
    assert option_rules.departures(config, RunOptions(), lambda: None) == []
    for placement in ("pre", "post"):
        options = RunOptions(norm=placement).validate(config)
        trace, stages = live_trace(config, state, options)
        assert not trace.options.output_norm and not torch.allclose(trace["logits"], base["logits"])
        assert view_for(trace, stages["dec.0.norm1"], ViewState()).placement == placement
        assert option_rules.departures(config, options, lambda: None)


def test_the_schematic_draws_olmo2s_norm_after_the_sublayer(qapp):
    from attnlab.ui.plots.schematic import Schematic

    _model, _hf, config, _state = built("olmo2")
    schematic = Schematic()
    try:
        schematic.set_run(config, RunOptions().resolved(config))
        schematic.box_rect("dec.0.norm1")  # lays out
        column = [(i.box, i.label) for i in schematic.items if i.kind in ("attn", "ffn", "norm", "add")]
        order = [box for box, _ in column]
        attn, norm1 = order.index("dec.0.self"), order.index("dec.0.norm1")
        assert norm1 == attn + 1 and column[norm1 + 1] == ("dec.0.norm1", "+")  # sub-layer → norm → +
        ffn = order.index("dec.0.ffn")
        assert order[ffn + 1] == "dec.0.norm2" and column[ffn + 2] == ("dec.0.norm2", "+")
        assert "Norm on the output" in schematic.texts[0][1]
        schematic.set_run(config, RunOptions(norm="pre").resolved(config))
        schematic.box_rect("dec.0.norm1")
        order = [i.box for i in schematic.items if i.kind in ("attn", "ffn", "norm", "add")]
        assert order.index("dec.0.norm1") < order.index("dec.0.self")  # pre-norm: the norm before attention
    finally:
        schematic.close()
        schematic.deleteLater()


# ---- Gemma 2: soft-capping, √query_pre_attn_scalar, sandwich norms, local/global layers -------------------------
def recorded(config, state, eager: bool):
    from attnlab.engine.trace import Recorder, finish

    rec = Recorder(True, eager=eager)
    with torch.inference_mode():
        module_of(config, state)(None, torch.tensor([IDS]), rec=rec)
    return finish(rec, config, RunOptions().resolved(config), "cpu")


def test_gemma2_soft_capping_is_its_own_step_in_the_eager_and_the_lazy_recording():
    _model, _hf, config, state = built("gemma2")
    assert (config.attn_softcap, config.final_softcap, config.query_scale_dim) == (2.0, 3.0, 16.0)
    eager, lazy = recorded(config, state, True), recorded(config, state, False)
    for layer in range(config.n_decoder_layers):
        site = f"dec.{layer}.self"
        scores = eager[f"{site}.scores"]
        scaled = scores * 16**-0.5  # transformers: scores · query_pre_attn_scalar^-0.5
        capped = torch.tanh(scaled / 2.0) * 2.0
        for trace in (eager, lazy):
            assert torch.allclose(trace[f"{site}.scaled"], scaled, atol=1e-6)
            assert torch.allclose(trace[f"{site}.capped"], capped, atol=1e-6)
            assert trace[f"{site}.capped"].abs().max() <= 2.0 < scaled.abs().max()  # the cap bends them
            assert torch.allclose(trace[f"{site}.masked"], capped + trace[f"{site}.mask"], atol=1e-6)
            assert torch.allclose(trace[f"{site}.weights"], eager[f"{site}.weights"], atol=1e-6)
    z = eager["logits_uncapped"]  # [T, V]: the projection before the final cap
    assert torch.allclose(eager["logits"], torch.tanh(z / 3.0) * 3.0, atol=1e-6) and z.abs().max() > 3.0


def test_gemma2_pages_say_what_the_scores_are_divided_by_and_capped_with():
    _model, _hf, config, state = built("gemma2")
    trace, stages = live_trace(config, state)
    keys = list(stages)
    assert keys.index("dec.0.self.scale_why") + 1 == keys.index("dec.0.self.capped")
    assert keys.index("dec.0.self.capped") + 1 == keys.index("dec.0.self.mask")
    assert "√16 (query_pre_attn_scalar)" in stages["dec.0.self.scaled"].title
    scaled_page = explanation_html(stages["dec.0.self.scaled"], trace)
    assert "query_pre_attn_scalar = 16" in scaled_page and "√d<sub>k</sub> = √8" in scaled_page
    capped_page = explanation_html(stages["dec.0.self.capped"], trace)
    assert "attn_logit_softcapping = 2" in capped_page
    assert "2 · tanh((Q Kᵀ / √16) / 2) + M" in explanation_html(stages["dec.0.self.masked"], trace)
    assert "final_logit_softcapping = 3" in explanation_html(stages["out.logits"], trace)
    view = view_for(trace, stages["dec.1.self.capped"], ViewState(head=2))
    expected = torch.tanh(trace["dec.1.self.scaled"][2] / 2.0) * 2.0
    assert torch.allclose(torch.from_numpy(view.matrix.matrix), expected, atol=1e-6)


def test_gemma2_local_and_global_layers_each_show_their_own_mask():
    _model, _hf, config, state = built("gemma2")
    trace, stages = live_trace(config, state)
    T = trace["dec.0.self.mask"].shape[0]
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    for layer in range(config.n_decoder_layers):
        local = layer % 2 == 0  # layer_types: sliding, full, sliding, full
        allowed = (j <= i) & ((i - j < 3) if local else True)
        assert torch.equal(trace[f"dec.{layer}.self.mask"] == 0, allowed), layer
        page = explanation_html(stages[f"dec.{layer}.self.mask"], trace)
        assert ("sliding window W = 3" in page) == local, layer


def test_gemma2_sandwich_norms_show_transformers_own_numbers():
    model, _hf, config, state = built("gemma2")
    trace, stages = live_trace(config, state)
    layer = model.model.layers[1]
    x = trace["dec.0.out"]  # [T, d]: layer 1's input
    with torch.no_grad():
        pre = layer.input_layernorm(x.clone())
        f = trace["dec.1.self.out"]  # attention's output on pre
        post = layer.post_attention_layernorm(f.clone())
    first = view_for(trace, stages["dec.1.norm1"], ViewState())
    assert first.placement == "sandwich"
    assert torch.allclose(torch.from_numpy(first.slots[1].matrix), pre, atol=1e-5)
    second = view_for(trace, stages["dec.1.postnorm1"], ViewState())
    slots = [torch.from_numpy(s.matrix) for s in second.slots]
    assert torch.equal(slots[0], f) and torch.allclose(slots[1], post, atol=1e-5)
    assert torch.allclose(slots[2], x + post, atol=1e-5)
    keys = list(stages)
    assert keys.index("dec.1.postnorm1") == keys.index("dec.1.norm1.norm_vs_batch") + 1
    assert "RMSNorm_post(self-attention(RMSNorm(x)))" in second.heading.text
    page = explanation_html(stages["dec.1.norm2"], trace)
    assert "y = x + RMSNorm_post(F(RMSNorm(x)))" in page


def test_the_schematic_draws_gemma2s_sandwich(qapp):
    from attnlab.ui.plots.schematic import Schematic

    _model, _hf, config, _state = built("gemma2")
    schematic = Schematic()
    try:
        schematic.set_run(config, RunOptions().resolved(config))
        schematic.box_rect("dec.0.norm1")
        order = [i.box for i in schematic.items if i.kind in ("attn", "ffn", "norm", "add")]
        at = order.index("dec.0.self")
        assert order[at - 1 : at + 3] == ["dec.0.norm1", "dec.0.self", "dec.0.postnorm1", "dec.0.postnorm1"]
        ffn = order.index("dec.0.ffn")
        assert order[ffn - 1 : ffn + 2] == ["dec.0.norm2", "dec.0.ffn", "dec.0.postnorm2"]
        assert "Sandwich" in schematic.texts[0][1]
    finally:
        schematic.close()
        schematic.deleteLater()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        (
            {"layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention"]},
            "layer_types",
        ),
        ({"head_dim": 0}, "head_dim"),  # w-headdim: another head_dim opens now; 0 is no head size
        ({"attn_logit_softcapping": -1.0}, "attn_logit_softcapping"),
    ],
)
def test_gemma2_settings_attnlab_cannot_represent_are_refused(changes, field):
    _model, hf_config = FAMILY_CASES["gemma2"][0].build()
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config, **changes})
    assert repr(field) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["qwen3", "olmo2", "gemma2", "gemma3"])
def test_every_stage_of_these_families_is_drawn_and_explained(qapp, name):
    from attnlab.ui.stages import panel_class_for

    _model, _hf, config, state = built(name)
    trace, stages = live_trace(config, state)
    panels: dict = {}
    try:
        for stage in stages.values():
            cls = panel_class_for(stage.kind)
            panel = panels.setdefault(cls, cls())
            panel.show_stage(trace, stage, ViewState(head=1))
            assert "message" not in panel.shown_data(), (stage.key, panel.shown_data().get("message"))
            assert "No explanation is written" not in explanation_html(stage, trace), stage.key
    finally:
        for panel in panels.values():
            panel.close()
            panel.deleteLater()


# ---- Gemma 3: QK-norm (1 + w) and the local layers' own rotary base -----------------------------------------------
def test_gemma3_turns_each_layer_with_its_own_base_after_the_qk_norm():
    from transformers.models.gemma3.modeling_gemma3 import apply_rotary_pos_emb

    model, _hf, config, state = built("gemma3")
    assert (config.qk_norm, config.rope_local_theta, config.rope_theta) == ("head", 10000.0, 1e6)
    trace, stages = live_trace(config, state)
    T = trace["dec.0.self.q"].shape[1]
    positions = torch.arange(T)[None]
    for layer, kind in ((0, "sliding_attention"), (1, "sliding_attention"), (2, "full_attention")):
        hf_attn = model.model.layers[layer].self_attn
        x = trace[f"dec.{layer}.norm1.out"].clone()  # [T, d]
        with torch.no_grad():
            q = hf_attn.q_norm(hf_attn.q_proj(x).view(T, -1, 8)).transpose(0, 1)[None]  # [1, H, T, 8]
            k = hf_attn.k_norm(hf_attn.k_proj(x).view(T, -1, 8)).transpose(0, 1)[None]  # [1, H_kv, T, 8]
            cos, sin = model.model.rotary_emb(x[None], positions, kind)
            q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
        view = view_for(trace, stages[f"dec.{layer}.self.qk_norm"], ViewState(head=1))
        assert torch.allclose(torch.from_numpy(view.q_normed.matrix), q[0, 1], atol=1e-5)
        assert torch.allclose(trace[f"dec.{layer}.self.q"], q_rot[0], atol=1e-5), layer
        assert torch.allclose(trace[f"dec.{layer}.self.k"], k_rot[0], atol=1e-5), layer
        note = explanation_html(stages[f"dec.{layer}.self.qkv"], trace)
        base = "10000" if kind == "sliding_attention" else "1e+06"
        assert f"p / {base}<sup>" in note, note
    # one base for every layer would turn the local layers differently
    single = config.__class__(**{**config.__dict__, "rope_local_theta": 0.0})
    same, _ = live_trace(single, state)
    assert not torch.allclose(same["dec.0.self.q"], trace["dec.0.self.q"], atol=1e-3)


def test_gemma3_old_style_rope_fields_read_the_same():
    _model, hf_config = FAMILY_CASES["gemma3"][0].build()
    old = {k: v for k, v in hf_config.items() if k != "rope_parameters"}
    old.update(rope_theta=1e6, rope_local_base_freq=10000.0)
    assert config_from_hf(old) == config_from_hf(hf_config)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        (
            {"rope_parameters": {"sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}},
            "rope_parameters",
        ),
        ({"layer_types": ["full_attention", "sliding_attention", "sliding_attention"]}, "layer_types"),
    ],
)
def test_gemma3_settings_attnlab_cannot_represent_are_refused(changes, field):
    _model, hf_config = FAMILY_CASES["gemma3"][0].build()
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config, **changes})
    assert repr(field) in str(err.value) and "\n" not in str(err.value)


def test_gemma2_caps_matter_and_block_reads_follow_the_capped_chain(monkeypatch):
    """Without either cap the engine no longer matches transformers (the caps are what makes it agree), and a
    big map read block by block goes through the capped step too."""
    from attnlab.engine import derived_blocks

    model, _hf, config, state = built("gemma2")
    case = FAMILY_CASES["gemma2"][0]
    for field in ("attn_softcap", "final_softcap"):
        uncapped = config.__class__(**{**config.__dict__, field: 0.0})
        errors = compare_with_hf(case, model, uncapped, state)
        assert max(errors.values()) > 1e-2, field
    lazy, eager = recorded(config, state, False), recorded(config, state, True)
    monkeypatch.setattr(derived_blocks, "BLOCK_BYTES", 64)  # two rows of 8 keys per block
    for step in ("capped", "masked", "weights"):
        name = f"dec.1.self.{step}"
        assert derived_blocks.is_big_map(lazy, name)
        assert torch.allclose(derived_blocks.heads_value(lazy, name), eager[name], atol=1e-6), step


@pytest.mark.parametrize("name", ["qwen3", "olmo2", "gemma2", "gemma3"])
def test_a_saved_folder_opens_with_the_same_config(tmp_path, name):
    import attnlab

    model, hf_config = FAMILY_CASES[name][0].build()
    model.save_pretrained(str(tmp_path))
    opened = attnlab.load(str(tmp_path))
    assert opened.config == config_from_hf(hf_config)


def test_gemma2_output_stage_says_the_logits_are_capped_with_the_raw_range():
    _model, _hf, config, state = built("gemma2")
    trace, stages = live_trace(config, state)
    view = view_for(trace, stages["out.logits"], ViewState(position=2))
    raw = trace["logits_uncapped"][2]
    assert f"before the cap this position's reached {float(raw.min()):.2f} … {float(raw.max()):.2f}" in view.note
    assert torch.allclose(torch.from_numpy(view.row), torch.tanh(raw / 3.0) * 3.0, atol=1e-6)
