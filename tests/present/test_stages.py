"""Every stage panel shows exactly the trace's numbers, reacts to clicks, and explains the live shapes."""

import dataclasses

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from attnlab.engine.names import DISENTANGLED_TERMS
from attnlab.engine.options import RunOptions
from attnlab.present import position_bias
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import FAMILY_ONLY_KINDS
from attnlab.present.stages import (
    ATTENTION_STEPS,
    FACTORISED_STEP,
    INPUT_STEPS,
    NORM_COMPARE,
    OUTPUT_STEPS,
    Stage,
    ViewState,
    stages_for,
)
from attnlab.ui.plots.head_grid import HeadGrid
from attnlab.ui.plots.heatmap import LabeledHeatmap, elide_label
from attnlab.ui.stages import PANEL_CLASSES, panel_class_for
from attnlab.ui.stages.heads import LINE_THRESHOLD

SRC, TGT = "the black cat sees the dog", "le chat noir"


def make(tiny_model, arch="encoder-decoder", **kw):
    """The suite's tiny model with one encoder layer (what the stage lists below expect)."""
    return tiny_model(arch, n_encoder_layers=1, **kw)


@pytest.fixture(scope="module")
def enc_dec(tiny_model):
    return make(tiny_model)


@pytest.fixture(scope="module")
def panel_cache(qapp):
    """One instance per panel class for the whole module, as the main window keeps them (and it is faster)."""
    made = {}
    yield made
    for panel in made.values():
        panel.close()
        panel.deleteLater()


@pytest.fixture
def panels(panel_cache):
    def get(kind):
        cls = panel_class_for(kind)
        if cls not in panel_cache:
            panel_cache[cls] = cls()
            panel_cache[cls].resize(700, 500)
        return panel_cache[cls]

    return get


def np_(trace, name):
    return trace[name].numpy()


def site_labels(trace, site):
    stack, _, kind = site.split(".")
    q = trace["src.tokens"] if stack == "enc" else trace["tgt.tokens"]
    k = trace["src.tokens"] if stack == "enc" or kind == "cross" else trace["tgt.tokens"]
    if stack == "dec":  # decoder rows say what each position predicts: the next input, "?" after the last
        real = [t for t in q if t != "<pad>"]
        q = [
            f"{t} → {real[i + 1]}" if i + 1 < len(real) else (f"{t} → ?" if i + 1 == len(real) else t)
            for i, t in enumerate(q)
        ]
    return list(q), list(k)


def test_registry_covers_every_pipeline_kind():
    steps = ATTENTION_STEPS + INPUT_STEPS + OUTPUT_STEPS + (FACTORISED_STEP,)
    kinds = {k for k, _ in steps} | {"addnorm", NORM_COMPARE, "ffn"}
    kinds |= FAMILY_ONLY_KINDS  # the stages of imported families' mechanisms (QK-norm, soft-capping, …)
    kinds |= set(DISENTANGLED_TERMS)  # DeBERTa's score terms (test_deberta_stages.py)
    kinds |= {"lens", "moe"}  # the logit lens (decoder LMs) and Mixtral's experts
    kinds |= {"kv_cache"}  # a decoder self-attention's KV cache (present/views/kv_cache.py)
    kinds |= {k for k, _ in position_bias.STEPS}  # the position-bias stages (ALiBi; test_stages_alibi.py)
    for kind in kinds:
        assert kind in panel_class_for(kind).kinds
    assert {k for cls in PANEL_CLASSES for k in cls.kinds} == kinds
    with pytest.raises(KeyError, match="no stage panel"):
        panel_class_for("nonsense")


def check_stage(trace, stage, data, view):
    """Assert that what the panel says it shows is the trace's own data for this stage."""
    kind, site = stage.kind, stage.site
    if kind == "tokens":
        assert data["tokens"] == list(trace[f"{stage.side}.tokens"])
        assert data["ids"] == np_(trace, f"{stage.side}.ids").tolist()
        assert data["specials"] == [t in ("<s>", "</s>", "<pad>", "<unk>") for t in data["tokens"]]
    elif kind in ("embed", "pos", "input"):
        np.testing.assert_array_equal(data["matrix"], np_(trace, f"{stage.side}.{kind}"))
        assert data["rows"] == list(trace[f"{stage.side}.tokens"])
        if kind == "pos":
            for d in view.pe_dims:
                np.testing.assert_array_equal(data["curves"][d], np_(trace, f"{stage.side}.pos")[:, d])
            assert data["kind"] == "sinusoidal"
        if kind == "input":
            np.testing.assert_array_equal(data["pos"], np_(trace, f"{stage.side}.pos"))
    elif kind == "qkv":
        rows, cols = site_labels(trace, site)
        for part, labels in (("q", rows), ("k", cols), ("v", cols)):
            np.testing.assert_array_equal(data[part]["matrix"], np_(trace, f"{site}.{part}")[data["head"]])
            assert data[part]["rows"] == labels
    elif kind == "kv_cache":  # the cache at the last step: K and V of the K/V head the shown head reads
        kv_head = data["kv_head"]
        for part in ("k", "v"):
            np.testing.assert_array_equal(data[part]["matrix"], np_(trace, f"{site}.{part}")[kv_head])
        assert data["position"] == len(trace["tgt.tokens"]) - 1 and data["new"] == 1
    elif kind in ("scores", "scaled", "masked", "weights"):
        rows, cols = site_labels(trace, site)
        np.testing.assert_array_equal(data["matrix"], np_(trace, f"{site}.{kind}")[data["head"]])
        assert (data["rows"], data["cols"]) == (rows, cols)
        blocked = np.isneginf(np_(trace, f"{site}.mask"))
        if blocked.any():
            np.testing.assert_array_equal(data["masked"], blocked)
        else:
            assert data["masked"] is None
        if kind == "weights":
            assert data["levels"] == (0.0, 1.0)
    elif kind == "mask":
        np.testing.assert_array_equal(data["matrix"], np_(trace, f"{site}.mask"))
        np.testing.assert_array_equal(data["blocked"], np.isneginf(np_(trace, f"{site}.mask")))
    elif kind == "heads":
        np.testing.assert_array_equal(data["weights"], np_(trace, f"{site}.weights"))
    elif kind == "lines":
        w = np_(trace, f"{site}.weights")[data["head"]]
        expected = {(int(q), int(k)) for q, k in zip(*np.nonzero(w >= LINE_THRESHOLD), strict=True)}
        assert {(q, k) for q, k, _ in data["lines"]} == expected
        # every query name ends at its dot on the left, every key name starts at its dot on the right
        labels = data["token_labels"]
        queries = [label for label in labels if label.inside]
        keys = [label for label in labels if not label.inside]
        assert [label.text for label in queries] == [elide_label(t) for t in data["rows"]]
        assert [label.text for label in keys] == [elide_label(t) for t in data["cols"]]
        assert all(label.x < 0.5 for label in queries) and all(label.x > 0.5 for label in keys)
    elif kind == "context":
        np.testing.assert_array_equal(data["matrix"], np_(trace, f"{site}.context")[data["head"]])
    elif kind == "concat":
        concat = np_(trace, f"{site}.concat")
        np.testing.assert_array_equal(data["matrix"], concat)
        dk = concat.shape[1] // data["n_heads"]
        assert data["boundaries"] == [h * dk - 0.5 for h in range(1, data["n_heads"])]
    elif kind == "attn_out":
        np.testing.assert_array_equal(data["matrix"], np_(trace, f"{site}.out"))
    elif kind == "addnorm":
        prefix = f"{stage.layer}.norm{stage.norm}"
        np.testing.assert_array_equal(data["before"]["matrix"], np_(trace, f"{prefix}.in"))
        np.testing.assert_array_equal(data["after"]["matrix"], np_(trace, f"{prefix}.out"))
        np.testing.assert_array_equal(data["mean"], np_(trace, f"{prefix}.mean"))
        np.testing.assert_array_equal(data["var"], np_(trace, f"{prefix}.var"))
        assert data["norm"] == trace.options.norm
    elif kind == "ffn":
        hidden = np_(trace, f"{stage.layer}.ffn.hidden")
        np.testing.assert_array_equal(data["hidden"]["matrix"], hidden)
        np.testing.assert_array_equal(data["out"]["matrix"], np_(trace, f"{stage.layer}.ffn.out"))
        assert data["zero_share"] == pytest.approx(float((hidden == 0).mean()))
        assert data["activation"] == "relu"
    elif kind == "scale_why":
        scores = np_(trace, f"{site}.scores")
        assert data["d_k"] == np_(trace, f"{site}.q").shape[-1]
        allowed = np.isfinite(np_(trace, f"{site}.mask"))
        assert data["raw_counts"].sum() == scores.shape[0] * allowed.sum()
        assert data["std_raw"] == pytest.approx(float(scores[:, allowed].astype(np.float64).std()), rel=1e-5)
    elif kind == NORM_COMPARE:
        x = np_(trace, f"{stage.layer}.norm{stage.norm}.in")
        np.testing.assert_array_equal(data["x"], x)
        np.testing.assert_allclose(data["ln_mean"], x.mean(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(data["bn_mean"], x.mean(axis=0), rtol=1e-5, atol=1e-6)
    elif kind in ("logits", "probs"):
        row = trace[kind][data["position"]]
        assert data["ids"] == torch.topk(row, min(view.top_k, row.shape[0])).indices.tolist()
        np.testing.assert_array_equal(data["values"], row.numpy()[data["ids"]])
    elif kind == "lens":  # the logit lens: the last row is the model's own top prediction
        np.testing.assert_array_equal(data["probs"], trace["lens.probs"].numpy())
        np.testing.assert_array_equal(data["lens"]["matrix"], trace["lens.probs"].numpy()[:, :, 0])
        assert data["ids"][-1, :, 0].tolist() == trace["probs"].argmax(-1).tolist()
    else:  # pragma: no cover - a new kind needs a check here
        raise AssertionError(f"no check for kind {kind}")


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only", "encoder-only"])
def test_every_stage_shows_the_traces_data(panels, arch, tiny_model):
    trace = make(tiny_model, arch).trace(SRC, TGT, RunOptions(pad_to=9))
    view = ViewState(head=2, top_k=5, colormap="magma")
    stages = stages_for(trace)
    assert {s.kind for s in stages} >= {"tokens", "qkv", "weights", "addnorm", "ffn", "probs"}
    for stage in stages:
        panel = panels(stage.kind)
        panel.show_stage(trace, stage, view)
        data = panel.shown_data()
        assert "message" not in data, (stage.key, data.get("message"))
        check_stage(trace, stage, data, view)
        if "head" in data:
            assert data["head"] == 2


def test_cross_attention_rows_are_decoder_columns_encoder(panels, enc_dec):
    trace = enc_dec.trace(SRC, TGT)
    stage = next(s for s in stages_for(trace) if s.key == "dec.1.cross.weights")
    panel = panels("weights")
    panel.vocab = enc_dec.tgt_tokenizer.id_to_token
    try:
        panel.show_stage(trace, stage, ViewState())
    finally:
        panel.vocab = None
    data = panel.shown_data()
    # rows: "input → predicted", the next decoder input (teacher forcing), the model's argmax after the last
    tgt = list(trace["tgt.tokens"])
    guess = enc_dec.tgt_tokenizer.id_to_token(int(trace["logits"][-1].argmax()))
    assert data["rows"] == [f"{a} → {b}" for a, b in zip(tgt, tgt[1:], strict=False)] + [f"{tgt[-1]} → {guess}"]
    assert data["cols"] == trace["src.tokens"]
    assert data["matrix"].shape == (len(trace["tgt.tokens"]), len(trace["src.tokens"]))


def test_mask_click_emits_toggle_and_the_rerun_blocks_that_cell(qtbot, panels, enc_dec):
    options = RunOptions()
    trace = enc_dec.trace(SRC, TGT, options)
    stage = next(s for s in stages_for(trace) if s.key == "enc.0.self.mask")
    panel = panels("mask")
    panel.show()
    panel.show_stage(trace, stage, ViewState())
    qtbot.waitExposed(panel)
    heatmap = panel.findChild(LabeledHeatmap)
    view = heatmap.graphics_view()
    point = view.mapFromScene(heatmap.scene_pos_of_cell(2, 4))
    with qtbot.waitSignal(panel.maskCellToggled, timeout=2000) as blocker:
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert blocker.args == ["enc.0.self", 2, 4]
    options = options.toggled_mask_cell(*blocker.args)
    panel.show_stage(enc_dec.trace(SRC, TGT, options), stage, ViewState())
    blocked = panel.shown_data()["blocked"]
    assert blocked[2, 4] and blocked.sum() == 1


def test_head_grid_click_selects_a_head(qtbot, panels, enc_dec):
    trace = enc_dec.trace(SRC, TGT)
    stage = next(s for s in stages_for(trace) if s.key == "dec.0.self.heads")
    panel = panels("heads")
    panel.show()
    panel.show_stage(trace, stage, ViewState(head=0))
    qtbot.waitExposed(panel)
    grid = panel.findChild(HeadGrid)
    assert grid.selected() == 0
    view = grid.graphics_view()
    point = view.mapFromScene(grid.scene_pos_of_head(3))
    with qtbot.waitSignal(panel.headSelected, timeout=2000) as blocker:
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert blocker.args == [3] and grid.selected() == 3


def test_selected_head_beyond_the_head_count_is_clamped(panels, enc_dec):
    trace = enc_dec.trace(SRC, TGT, RunOptions(n_heads=2))
    for kind in ("qkv", "weights", "lines", "context", "heads"):
        stage = next(s for s in stages_for(trace) if s.kind == kind)
        panel = panels(kind)
        panel.show_stage(trace, stage, ViewState(head=9))
        assert panel.shown_data()["head"] == 1
    shown = panels("weights").shown_data()["matrix"]
    np.testing.assert_array_equal(shown, np_(trace, "enc.0.self.weights")[1])


def test_top_k_bars_are_the_true_top_k_at_the_chosen_position(panels, enc_dec):
    trace = enc_dec.trace(SRC, TGT, RunOptions(temperature=0.5))
    panel = panels("probs")
    for kind in ("probs", "logits"):
        stage = next(s for s in stages_for(trace) if s.kind == kind)
        panel.show_stage(trace, stage, ViewState(top_k=3, position=1))
        data = panel.shown_data()
        top = torch.topk(trace[kind][1], 3)
        assert data["position"] == 1 and data["ids"] == top.indices.tolist()
        assert data["argmax"] == int(trace[kind][1].argmax())
        assert data["temperature"] == pytest.approx(0.5, rel=1e-3)
    panel.set_vocabulary(lambda i: f"word{i}")
    panel.show_stage(trace, stage, ViewState(top_k=2, position=-1))
    data = panel.shown_data()
    assert data["position"] == len(trace["tgt.tokens"]) - 1
    assert data["labels"] == [f"word{i}" for i in data["ids"]]


def test_ffn_zero_share_and_colormap(panels, enc_dec):
    trace = enc_dec.trace(SRC, TGT)
    stage = next(s for s in stages_for(trace) if s.kind == "ffn")
    panel = panels("ffn")
    panel.show_stage(trace, stage, ViewState(colormap="cividis"))
    hidden = np_(trace, f"{stage.layer}.ffn.hidden")
    data = panel.shown_data()
    assert 0 < data["zero_share"] < 1
    assert data["zero_share"] == pytest.approx(np.count_nonzero(hidden == 0) / hidden.size)
    np.testing.assert_array_equal(data["zeros"], hidden == 0)
    assert all(m.colormap_name() == "cividis" for m in panel.findChildren(LabeledHeatmap))


def test_positional_encoding_off_shows_a_message_or_zeros_and_never_raises(panels, enc_dec):
    trace = enc_dec.trace(SRC, TGT, RunOptions(positional=False))
    pos_stage = next(s for s in stages_for(trace) if s.kind == "pos")  # kept in the list, its numbers stay
    pos_panel = panels("pos")
    pos_panel.show_stage(trace, pos_stage, ViewState())
    assert "switched off" in pos_panel.shown_data()["message"]
    without_table = dataclasses.replace(trace, config=dataclasses.replace(trace.config, positional="none"))
    pos_panel.show_stage(without_table, pos_stage, ViewState())  # a model without positions: the general words
    assert "No positional encoding" in pos_panel.shown_data()["message"]
    input_panel = panels("input")
    input_stage = Stage("src.input", "input", "input", "Source input", side="src")
    input_panel.show_stage(trace, input_stage, ViewState())
    data = input_panel.shown_data()
    assert data["pos"] is None
    np.testing.assert_array_equal(data["matrix"], np_(trace, "src.embed"))
    # the middle box stays a map (no swap to a message and back on the toggle): zeros, titled as such
    pos_map = input_panel._maps["pos"]
    assert pos_map.has_data() and "off" in pos_map.record["title"] and "+ 0" in pos_map.record["title"]
    assert pos_map.levels() is not None and not np.any(pos_map._raw)


def test_every_panel_survives_a_trace_without_intermediates(panels, enc_dec):
    full = enc_dec.trace(SRC, TGT)
    fast = enc_dec.trace(SRC, TGT, RunOptions(record=False))
    for stage in stages_for(full):
        panel = panels(stage.kind)
        panel.show_stage(fast, stage, ViewState())
        data = panel.shown_data()
        if stage.kind in ("logits", "probs"):
            assert "message" not in data
        else:
            assert data.get("message"), stage.key


def test_residual_off_and_gelu_are_recognised(panels, tiny_model):
    model = make(tiny_model, "encoder-only", activation="gelu")
    trace = model.trace(SRC, options=RunOptions(residual=False))
    stages = {s.kind: s for s in stages_for(trace)}
    addnorm = panels("addnorm")
    addnorm.show_stage(trace, stages["addnorm"], ViewState())
    assert addnorm.shown_data()["residual_off"]
    assert "residual connection is switched OFF" in explanation_html(stages["addnorm"], trace)
    ffn = panels("ffn")
    ffn.show_stage(trace, stages["ffn"], ViewState())
    assert ffn.shown_data()["activation"] == "gelu"
    addnorm.show_stage(model.trace(SRC), stages["addnorm"], ViewState())
    assert not addnorm.shown_data()["residual_off"]


def test_add_and_norm_shows_the_placement_the_trace_carries(panels, enc_dec):
    """The placement drawn is the run's (its resolved options), whatever the model was trained with."""
    made = enc_dec.trace(SRC, TGT, RunOptions(norm="pre"))
    stage = next(s for s in stages_for(made) if s.kind == "addnorm")
    addnorm = panels("addnorm")
    addnorm.show_stage(made, stage, ViewState())
    assert addnorm.shown_data()["norm"] == "pre"
    post = enc_dec.trace(SRC, TGT, RunOptions(norm="post"))
    addnorm.show_stage(post, stage, ViewState())
    assert addnorm.shown_data()["norm"] == "post"
