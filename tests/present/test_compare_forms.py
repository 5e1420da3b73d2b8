"""Compare shows every entry a stage shows, in the stage's own form where A | B | B − A makes sense (issue 12,
item 4): B − A equals the difference of the two traces for each entry shown; the all-heads grid as three grids;
the output bars with B − A per token; and a note instead of a misleading matrix where a form does not fit."""

import numpy as np
import pytest
from PySide6.QtWidgets import QComboBox

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present import compare
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.plots.compare_panel import MAX_ROWS, ComparePanel

SRC, TGT = "the black cat sees the small dog", "le chat noir"


@pytest.fixture(scope="module")
def gated(tiny_model):
    return tiny_model("encoder-decoder", seed=5, ffn="gated", activation="silu")


@pytest.fixture(scope="module")
def runs(gated):
    return gated.trace(SRC, TGT), gated.trace(SRC, TGT, RunOptions(norm="pre", temperature=0.7))


@pytest.fixture
def panel(qtbot):
    p = ComparePanel()
    qtbot.addWidget(p)
    p.resize(1200, 700)
    p.show()
    return p


def stage(trace, kind, site=None):
    return next(s for s in stages_for(trace) if s.kind == kind and (site is None or s.site == site))


def assert_entries_are_trace_differences(entries, a, b, head):
    for entry in entries:
        va, vb = a[entry.name], b[entry.name]
        if va.ndim == 3:  # per head: the shown head
            va, vb = va[head], vb[head]
        np.testing.assert_array_equal(entry.difference, (vb - va).numpy().reshape(entry.a.shape))


def test_every_entry_of_a_gated_ffn_is_compared_and_a_chooser_picks_one(qtbot, panel, runs):
    a, b = runs
    ffn = stage(b, "ffn")
    entries = compare.compare_stage(a, b, ffn, 0)
    assert [e.name for e in entries] == [names.ffn_entry(ffn.layer, p) for p in ("hidden", "out", "gate", "up")]
    assert_entries_are_trace_differences(entries, a, b, 0)
    panel.show_pair(a, b, ffn, ViewState(compare="diff"))
    chooser = panel.findChild(QComboBox, "compareEntryChooser")
    assert len(entries) > MAX_ROWS and chooser.isVisible() and chooser.count() == 4
    chooser.setCurrentIndex(3)
    chooser.activated.emit(3)
    (shown,) = panel.shown_data()["entries"]
    assert shown.name == names.ffn_entry(ffn.layer, "up")
    np.testing.assert_array_equal(shown.difference, (b[shown.name] - a[shown.name]).numpy())


def test_qkv_shows_all_three_without_a_chooser(panel, runs):
    a, b = runs
    panel.show_pair(a, b, stage(b, "qkv", "dec.0.cross"), ViewState(compare="diff", head=2))
    shown = panel.shown_data()["entries"]
    assert [e.name.rsplit(".", 1)[1] for e in shown] == ["q", "k", "v"]
    assert not panel.findChild(QComboBox, "compareEntryChooser").isVisible()
    assert_entries_are_trace_differences(shown, a, b, 2)


def test_all_heads_stage_compares_three_grids(panel, runs, gated):
    a, b = runs
    panel.show_pair(a, b, stage(b, "heads", "enc.1.self"), ViewState(compare="diff"))
    data = panel.shown_data()
    (entry,) = data["entries"]
    assert data["form"] == "grids" and entry.a.shape == (4, 8, 8)
    np.testing.assert_array_equal(entry.difference, (b["enc.1.self.weights"] - a["enc.1.self.weights"]).numpy())
    assert panel._grids.diff.head_count() == 4 and panel._grids.diff.isVisible()
    eight = gated.trace(SRC, TGT, RunOptions(n_heads=8))
    panel.show_pair(a, eight, stage(eight, "heads", "enc.1.self"), ViewState(compare="diff"))
    (entry,) = panel.shown_data()["entries"]
    assert entry.difference is None and "head count differs (4 in A, 8 in B)" in entry.message
    assert not panel._grids.diff.isVisible() and panel._grids.message.isVisible()


def test_output_bars_show_b_minus_a_per_token(panel, runs):
    a, b = runs
    panel.show_pair(a, b, stage(b, names.PROBS), ViewState(compare="diff", position=1, top_k=6))
    data = panel.shown_data()
    assert data["form"] == "bars" and data["positions"] == (1, 1)
    ids = np.asarray(data["ids"])
    expected = (b[names.PROBS][1] - a[names.PROBS][1]).numpy()[ids]  # straight from the two traces
    np.testing.assert_allclose(data["difference"], expected, rtol=1e-6, atol=1e-7)
    assert panel._diff_bars.isVisible()
    panel.show_pair(a, b, stage(b, names.PROBS), ViewState(compare="side"))
    assert not panel._diff_bars.isVisible()


def test_token_ids_get_no_difference_and_masks_compare_where_they_block(gated):
    a = gated.trace(SRC, TGT)
    b = gated.trace(SRC, TGT, RunOptions(causal=(("enc.self", True),)))
    (ids,) = compare.compare_stage(a, b, stage(b, "tokens", None), 0)
    assert ids.difference is None and ids.message == compare.NO_DIFFERENCE
    (mask,) = compare.compare_stage(a, b, stage(b, "mask", "enc.0.self"), 0)
    blocked_a, blocked_b = (np.isneginf(t["enc.0.self.mask"].numpy()).astype(np.float32) for t in (a, b))
    expected = blocked_b - blocked_a
    np.testing.assert_array_equal(mask.difference, np.broadcast_to(expected, mask.b.shape))
    assert np.isfinite(mask.difference).all() and mask.difference.max() == 1  # B blocks the future, A does not


@pytest.mark.parametrize("kind", ["lines", "scale_why", "norm_vs_batch"])
def test_stages_without_an_a_b_form_say_what_is_compared(panel, runs, kind):
    a, b = runs
    st = next(s for s in stages_for(b) if s.kind == kind)
    panel.show_pair(a, b, st, ViewState(compare="diff"))
    assert compare.FORM_NOTES[kind] in panel._note.text()
    assert_entries_are_trace_differences(panel.shown_data()["entries"], a, b, 0)
