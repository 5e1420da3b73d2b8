"""The study controls in the window, driven as a person would: projections off, ablating the shown head
from an attention stage (the output shows before → after), and pinning a run as A to compare A | B | B − A."""

import numpy as np
import pytest
import torch

from attnlab.engine import names
from attnlab.present.stages import output_key

WAIT = 15000


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(open_window, tiny_model):
    return open_window(tiny_model("encoder-decoder", seed=3))


def retrace(qtbot, w, action):
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        action()
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    return w.session.trace


def choose(combo, data):
    i = combo.findData(data)
    assert i >= 0, data
    combo.setCurrentIndex(i)
    combo.activated.emit(i)


def test_projections_checkbox_runs_plain_dot_product_attention(qtbot, win):
    box = win.findChild(type(win.controls.scale), "projectionsCheck")
    assert box.isChecked()
    trace = retrace(qtbot, win, lambda: box.setChecked(False))
    assert trace.options.projections is False
    torch.testing.assert_close(trace["enc.0.self.out"], trace["enc.0.self.concat"])
    win.session.set_stage(names.site_entry("enc.0.self", "qkv"))
    assert "projections are off" in win.explanation.toPlainText().lower()


def test_ablate_combo_ablates_the_shown_head_and_the_output_shows_before_and_after(qtbot, win):
    combo = win.controls.ablate
    win.session.set_stage(output_key(names.PROBS))
    assert not combo.isEnabled()  # no attention site on the output stage
    win.session.set_stage(names.site_entry("dec.1.cross", "weights"))
    win.session.set_view(head=1)
    assert combo.isEnabled() and combo.currentData() is None
    trace = retrace(qtbot, win, lambda: choose(combo, "zero"))
    assert trace.options.ablate == (("dec.1.cross", 1, "zero"),)
    assert np.all(trace["dec.1.cross.concat"][:, 8:16].numpy() == 0)
    win.session.set_view(head=0)
    assert combo.currentData() is None  # head 0 is not ablated
    win.session.set_view(head=1)
    assert combo.currentData() == "zero"
    win.session.set_stage(output_key(names.PROBS))
    change = win.current_panel().shown_data()["ablation"]
    plain = win.session.model.trace("the black cat sees the dog", "le chat")["probs"][-1].numpy()
    np.testing.assert_allclose(change.before, plain[change.ids], rtol=1e-4, atol=1e-6)
    note = win.current_panel().findChild(type(win.stage_title), "ablationNote")
    assert "→" in note.text() and "head 2 of decoder layer 2 cross-attention zeroed" in note.text()


def test_pin_compare_difference_and_unpin(qtbot, win):
    key = names.site_entry("enc.1.self", "weights")
    win.session.set_stage(key)
    a = win.session.trace
    win.findChild(type(win.dark_action), "pinAction").trigger()
    assert win.session.pinned is a and win.session.view.compare == "diff"
    assert win.controls.compare.isEnabled() and win.controls.compare.currentData() == "diff"
    b = retrace(qtbot, win, lambda: win.controls.scale.setChecked(False))  # the pin survives the toggle
    b = retrace(qtbot, win, lambda: win.controls.residual.setChecked(False))
    assert win.session.pinned is a
    panel = win.current_panel()
    assert panel.objectName() == "comparePanel"
    (entry,) = panel.shown_data()["entries"]
    np.testing.assert_array_equal(entry.difference, (b[key][0] - a[key][0]).numpy())
    choose(win.controls.compare, "side")
    assert panel.shown_data()["mode"] == "side"
    retrace(qtbot, win, lambda: win.session.set_src("dog bites man", debounce=False))
    (entry,) = panel.shown_data()["entries"]
    assert entry.difference is None and "different sentence lengths" in entry.message
    win.session.set_stage(output_key(names.PROBS))
    assert set(panel.shown_data()) >= {"a", "b", "ids"}
    win.controls.pin.click()  # unpin
    assert win.session.pinned is None and win.current_panel().objectName() != "comparePanel"


def test_ablate_combo_works_on_every_stage_of_the_site_including_divide_by_root_dk(qtbot, win):
    """A screenshot seemed to show it greyed on the ÷√dₖ stage: it is usable on every stage of the site
    (ablation acts on the site's context, whichever step is shown) and only greyed where there is no site."""
    combo, session = win.controls.ablate, win.session
    site_stages = [s for s in session.stages if s.site == "enc.0.self"]
    assert {"scaled", "scale_why", "scores", "weights", "heads"} <= {s.kind for s in site_stages}
    for stage in site_stages:
        session.set_stage(stage.key)
        assert combo.isEnabled() and combo.isEnabledTo(win), stage.key
    session.set_stage(names.site_entry("enc.0.self", "scaled"))
    session.set_view(head=1)
    assert "head 2 of encoder layer 1 self-attention" in combo.toolTip()  # counted from 1, as in the window
    trace = retrace(qtbot, win, lambda: choose(combo, "mean"))
    assert trace.options.ablate == (("enc.0.self", 1, "mean"),)
    for stage in site_stages:
        session.set_stage(stage.key)
        assert combo.currentData() == "mean", stage.key
    other = next(s for s in session.stages if s.site == "enc.1.self")
    session.set_stage(other.key)
    assert combo.isEnabled() and combo.currentData() is None  # the same head elsewhere is not ablated
    session.set_stage(next(s for s in session.stages if s.kind == "ffn").key)
    assert not combo.isEnabled()  # the feed-forward step has no heads


def test_ablate_combo_is_usable_when_the_window_opens_on_an_attention_stage(qtbot, open_window, tiny_model):
    """`attnlab --stage dec.0.cross.weights` asks for the stage before the first trace exists: when that trace
    arrives and the stage is picked, the Ablate control must follow it (a screenshot showed it greyed)."""
    w = open_window()
    w.session.stage_key = names.site_entry("dec.0.cross", "weights")  # what window_files does for --stage
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_model(tiny_model("encoder-decoder", seed=3), "the black cat sees the dog", "le chat")
    assert w.session.stage_key == names.site_entry("dec.0.cross", "weights")
    assert w.controls.ablate.isEnabled()
