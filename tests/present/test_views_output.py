"""The view-models of the token → token lines and the output bars (present/views/lines.py, output.py): the
chosen head's weights and exactly the links ≥ the threshold; the top-k bars are torch.topk of the recorded
row, the probabilities are softmax(logits / T), and the sentences name the run's temperature and best token."""

import numpy as np
import pytest
import torch

from attnlab.engine.options import RunOptions
from attnlab.present.kinds import KINDS, view_for
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.views.lines import LINE_THRESHOLD, LinesView
from attnlab.present.views.output import mask_position
from attnlab.present.views.output_bars import OutputView, top_k

SRC, TGT = "the black cat sees the dog", "le chat noir"


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", n_encoder_layers=1, n_decoder_layers=1)


@pytest.fixture(scope="module")
def trace(model):
    return model.trace(SRC, TGT)


def views_of(trace, kind: str, display: ViewState | None = None):
    return [(s, view_for(trace, s, display or ViewState())) for s in stages_for(trace) if s.kind == kind]


def test_every_stage_kind_has_a_view_model(trace, tiny_model):
    llama = tiny_model("decoder-only", norm="rmsnorm", ffn="gated", activation="silu").trace(SRC)
    for run in (trace, llama):
        assert {s.kind for s in stages_for(run)} <= set(KINDS)


@pytest.mark.parametrize("head", [1, 7])
def test_lines_are_the_heads_links_above_the_threshold(trace, head):
    shown_views = views_of(trace, "lines", ViewState(head=head))
    assert {s.site for s, _ in shown_views} == {"enc.0.self", "dec.0.self", "dec.0.cross"}
    for stage, view in shown_views:
        assert isinstance(view, LinesView) and view.head == min(head, 3) and view.n_heads == 4
        weights = trace[f"{stage.site}.weights"][view.head].float()  # [Tq, Tk]
        np.testing.assert_array_equal(view.weights, weights.numpy())
        strong = torch.nonzero(weights >= LINE_THRESHOLD).tolist()
        assert [(q, k) for q, k, _ in view.lines] == [tuple(p) for p in strong]
        assert all(w == pytest.approx(float(weights[q, k])) for q, k, w in view.lines)
        tq, tk = weights.shape
        assert f"({len(view.lines)} of {tq * tk})" in view.note and f"head {view.head + 1} of 4" in view.title
        assert len(view.rows) == tq and len(view.cols) == tk
    cross = dict((s.site, v) for s, v in shown_views)["dec.0.cross"]
    assert cross.cols == list(trace["src.tokens"]) and " → " in cross.rows[0]  # decoder rows: input → predicted


@pytest.mark.parametrize("position", [-1, 0, 2])
def test_output_bars_are_torchs_top_k_of_the_row(trace, position):
    logits = trace["logits"].float()  # [T, V]
    t = logits.shape[0]
    row = position % t
    ((_, probs_view),) = views_of(trace, "probs", ViewState(position=position, top_k=5))
    ((_, logits_view),) = views_of(trace, "logits", ViewState(position=position, top_k=5))
    assert isinstance(probs_view, OutputView) and probs_view.position == row == logits_view.position
    expected = torch.softmax(logits[row] / trace.options.temperature, dim=-1)  # [V]
    np.testing.assert_allclose(probs_view.row, expected.numpy(), rtol=1e-5, atol=1e-7)
    top = torch.topk(expected, 5)
    assert probs_view.ids == top.indices.tolist()
    np.testing.assert_allclose(probs_view.values, top.values.numpy(), rtol=1e-5)
    assert logits_view.ids == torch.topk(logits[row], 5).indices.tolist()
    assert probs_view.value_texts[0] == f"{float(top.values[0]):.1%}"
    assert logits_view.value_texts[0] == f"{float(logits[row].max()):.2f}"
    assert len(probs_view.positions) == t and probs_view.positions[row].startswith(f"{row}: ")
    assert probs_view.title.startswith(f"Next-token probabilities at position {row}:")
    assert f"Greedy decoding picks the orange bar, “{probs_view.labels[0]}”" in probs_view.note
    assert probs_view.ablation == "" and probs_view.change is None


def test_temperature_and_vocabulary_reach_the_words(model):
    trace = model.trace(SRC, TGT, RunOptions(temperature=2.0))
    ((_, view),) = views_of(trace, "probs", ViewState(top_k=3))
    assert "temperature T = 2" in view.note and view.temperature == 2.0
    stage = next(s for s in stages_for(trace) if s.kind == "probs")
    named = view_for(trace, stage, ViewState(top_k=3), lambda i: f"tok{i}")
    assert named.labels == [f"tok{i}" for i in view.ids]


def test_top_k_breaks_ties_by_the_lower_id_and_masked_lm_shows_the_mask():
    assert top_k(np.array([0.1, 0.5, 0.5, 0.2]), 3).tolist() == [1, 2, 3]
    assert top_k(np.array([1.0, 2.0]), 99).tolist() == [1, 0]
    assert mask_position({"src.tokens": ["[CLS]", "a", "[MASK]", "[SEP]"]}, 3) == 2
    assert mask_position({"src.tokens": ["<s>", "a"], "tgt.tokens": ["<s>"]}, 0) == 0
