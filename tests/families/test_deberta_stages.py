"""DeBERTa's score terms are drawn as their own stages: c2c, c2p and p2c before the score that is their sum,
each panel showing exactly the trace's numbers; the δ map is the row of the relative table each cell read
(checked against the model's own weights with torch); the pages state the model's formulas and scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stage_keys_for_config, stages_for
from attnlab.ui.stages import panel_class_for
from tests.engine.test_trace_budget import LONG_SRC, assert_estimate_close
from tests.support.tiny import build_tiny_model

SRC = "the black cat sees the small dog"
DEBERTA = dict(positional="none", rel_terms="c2p|p2c", rel_span=3, rel_norm=True, n_decoder_layers=0)
BUCKETED = dict(DEBERTA, rel_span=4, rel_buckets=4, rel_max_distance=12, rel_share_key=True)


@pytest.fixture(scope="module", params=[DEBERTA, BUCKETED], ids=["own-keys", "bucketed-shared"])
def model(request):
    return build_tiny_model("encoder-only", **request.param)


@pytest.fixture(scope="module")
def term_panel(qapp):
    panel = panel_class_for("c2p")()
    panel.resize(700, 500)
    yield panel
    panel.close()
    panel.deleteLater()


def test_the_terms_come_after_qkv_and_add_up_to_the_score(model):
    trace = model.trace(SRC, "")
    kinds = [s.kind for s in stages_for(trace) if s.site == "enc.0.self"]
    assert kinds[:6] == ["qkv", "c2c", "c2p", "p2c", "scores", "scaled"]
    titles = {s.kind: s.title for s in stages_for(trace) if s.site == "enc.0.self"}
    assert "÷ √(3·dₖ)" in titles["scaled"] and "c2c + c2p + p2c" in titles["scores"]
    assert stage_keys_for_config(trace.config) == [s.key for s in stages_for(trace)]
    view = ViewState(head=1)
    terms = [view_for(trace, s, view).matrix.matrix for s in stages_for(trace) if s.kind in ("c2c", "c2p", "p2c")]
    score = next(view_for(trace, s, view) for s in stages_for(trace) if s.key == "enc.0.self.scores")
    np.testing.assert_allclose(score.matrix.matrix, sum(terms[:3]), atol=1e-5)
    assert score.matrix.title.startswith("score = c2c + c2p + p2c")


def position_rows(model, layer: int, term: str) -> torch.Tensor:
    """Kr (c2p) or Qr (p2c) [H, 2k, dk] from the model's own weights: the table, its LayerNorm, the projection."""
    module = model.module
    table = torch.nn.functional.layer_norm(
        module.rel.embed.weight, (module.config.d_model,), module.rel.norm.weight, module.rel.norm.bias, 1e-5
    )  # [2k, d]
    attention = module.encoder[layer].self_attn
    own = attention.w_pk if term == "c2p" else attention.w_pq
    proj = own if own is not None else (attention.w_k if term == "c2p" else attention.w_q)
    with torch.no_grad():
        return proj(table).reshape(table.shape[0], module.config.n_heads, -1).transpose(0, 1)


def test_each_term_panel_shows_the_trace_and_the_rows_it_read(model, term_panel):
    trace = model.trace(SRC, "")
    view = ViewState(head=2, colormap="magma")
    for stage in (s for s in stages_for(trace) if s.kind in ("c2c", "c2p", "p2c")):
        term_panel.show_stage(trace, stage, view)
        data = term_panel.shown_data()
        assert "message" not in data and data["head"] == 2, stage.key
        site = stage.site
        np.testing.assert_array_equal(data["matrix"], trace[f"{site}.{stage.kind}"][2].numpy())
        q, k = trace[f"{site}.q"][2], trace[f"{site}.k"][2]  # [T, dk]
        if stage.kind == "c2c":
            assert data["rows"] is None
            np.testing.assert_allclose(data["matrix"], (q @ k.T).numpy(), atol=1e-5)
            continue
        rows = data["rows"]["matrix"].astype(np.int64)  # [T, T]: δ of each cell
        layer = names.layer_position(site)[1]
        table = position_rows(model, layer, stage.kind)[2]  # [2k, dk]
        content = q if stage.kind == "c2p" else k
        T = content.shape[0]
        expected = np.empty((T, T), dtype=np.float32)
        for i in range(T):
            for j in range(T):
                who = i if stage.kind == "c2p" else j
                expected[i, j] = float(content[who] @ table[rows[i, j]])
        np.testing.assert_allclose(data["matrix"], expected, atol=1e-4)
        assert rows.min() >= 0 and rows.max() <= 2 * trace.config.rel_span - 1
        assert (rows == 0).any() or (rows == 2 * trace.config.rel_span - 1).any()  # 9 tokens reach the clamp


def test_the_pages_state_the_models_formulas_and_scale(model):
    trace = model.trace(SRC, "")
    by_key = {s.key: s for s in stages_for(trace)}
    dk = trace.config.d_model // trace.config.n_heads
    scaled = explanation_html(by_key["enc.0.self.scaled"], trace)
    assert f"√(3 · {dk}) ≈ {math.sqrt(3 * dk):.2f}" in scaled and "√(3 · d<sub>k</sub>)" in scaled
    assert "δ(i, j)" in explanation_html(by_key["enc.0.self.c2p"], trace)
    assert "−bucket(j − i)" in explanation_html(by_key["enc.0.self.p2c"], trace)
    assert "S = A<sup>c→c</sup> + A<sup>c→p</sup> + A<sup>p→c</sup>" in explanation_html(
        by_key["enc.0.self.scores"], trace
    )
    shared = "share_att_key" in explanation_html(by_key["enc.0.self.c2p"], trace)
    assert shared == trace.config.rel_share_key


def test_positions_off_keeps_the_stages_and_says_why_a_term_is_missing(model, term_panel):
    on = model.trace(SRC, "")
    trace = model.trace(SRC, "", RunOptions(positional=False))
    assert [s.key for s in stages_for(trace)] == [s.key for s in stages_for(on)]
    stage = next(s for s in stages_for(trace) if s.kind == "c2p")
    term_panel.show_stage(trace, stage, ViewState())
    assert "switched off" in term_panel.shown_data()["message"]
    score = view_for(trace, next(s for s in stages_for(trace) if s.key == "enc.0.self.scores"), ViewState())
    assert score.matrix.title.startswith("score = c2c ·")


def test_other_models_have_no_term_stages(tiny_model):
    trace = tiny_model("encoder-only", n_decoder_layers=0).trace(SRC, "")
    assert not {s.kind for s in stages_for(trace)} & {"c2c", "c2p", "p2c"}


@pytest.mark.parametrize("options", [RunOptions(), RunOptions(n_heads=2), RunOptions(positional=False)])
def test_the_budget_counts_the_stored_terms(model, options):
    assert_estimate_close(model, options, LONG_SRC, "")


@pytest.mark.parametrize(
    "options",
    [
        RunOptions(),
        RunOptions(pad_to=12),
        RunOptions(n_heads=2, scale=False),
        RunOptions(positional=False),
        RunOptions(pad_to=10).with_custom_mask("enc.0.self", [(1, k) for k in range(10)]),
        RunOptions(ablate=(("enc.1.self", 1, "zero"),)),
    ],
    ids=["plain", "padding", "two heads, scale off", "positions off", "blocked row", "ablated head"],
)
def test_every_entry_of_a_lazy_trace_equals_the_eager_one(model, options):
    """The recording that derives entries on read and the one that keeps every value hold the same entries,
    equal (DeBERTa's sites take the step-by-step path in both; their c2c is a rule on Q and K)."""
    from tests.engine.test_trace_derived import assert_equal_values, run_both

    lazy, eager, _logits = run_both(model, options)
    assert set(eager.names()) <= set(lazy.names())  # the lazy one adds the tokens LiveModel records
    assert {names.site_entry("enc.0.self", t) for t in ("c2c", "scores", "weights")} <= set(eager.names())
    for name in eager.names():
        if isinstance(eager[name], torch.Tensor) and eager[name].is_floating_point():
            assert_equal_values(name, lazy[name], eager[name], tol=1e-5)


def test_the_positions_toggle_means_the_relative_terms_for_deberta(model):
    """The positions switch is not 'meaningless' for a model without a position table: it drops c2p and p2c,
    and the banner says the run departs from training."""
    from attnlab.engine import option_rules
    from attnlab.engine.option_specs import POSITIONAL

    check = POSITIONAL.controls[0]
    assert check.unavailable(model.config, RunOptions()) is None
    assert "c2p" in check.text_for(model.config)
    reasons = option_rules.departures(model.config, RunOptions(positional=False), lambda: None)
    assert any("relative" in r for r in reasons)
    plain = model.config.__class__(arch="encoder-only", positional="none", n_decoder_layers=0)
    assert check.unavailable(plain, RunOptions()) is not None  # a model with no positions at all


def test_why_scale_shows_the_division_this_model_makes(model):
    """The "why ÷ √dₖ?" stage compares the scores before and after DeBERTa's own division, √(3·dₖ)."""
    trace = model.trace(SRC, "")
    stage = next(s for s in stages_for(trace) if s.key == "enc.0.self.scale_why")
    shown = view_for(trace, stage, ViewState())
    dk = trace.config.d_model // trace.config.n_heads
    np.testing.assert_allclose(shown.stats.scaled, shown.stats.raw / math.sqrt(3 * dk), rtol=1e-6)
    assert f"√(3·dₖ) ≈ {math.sqrt(3 * dk):.2f}" in shown.heading


def test_both_position_terms_read_the_same_row_in_each_cell(model):
    """transformers gathers p2c with clamp(−bucket(j − i) + k) key by key and transposes: each cell lands on
    the row c2p reads (the δ maps of the two panels are equal, and both are clamp(bucket(i − j) + k))."""
    trace = model.trace(SRC, "")
    stages = {s.kind: s for s in stages_for(trace) if s.site == "enc.0.self"}
    c2p_rows, p2c_rows = (view_for(trace, stages[t], ViewState()).rows.matrix for t in ("c2p", "p2c"))
    np.testing.assert_array_equal(c2p_rows, p2c_rows)
    distance = trace[names.rel_entry("enc", "distance")].numpy()  # bucket(i - j)
    np.testing.assert_array_equal(c2p_rows, np.clip(distance + trace.config.rel_span, 0, 2 * trace.config.rel_span - 1))
