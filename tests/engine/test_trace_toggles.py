"""A toggle recomputes only what it changes, and the result is what a full re-run gives.

- temperature: the previous run's entries are reused (the same tensors); only `probs` is derived anew.
- a mask toggle: a re-run from the first layer it changes (tests/engine/test_trace_resume.py); every other: a full run.
- display-only changes (head shown, colour map, stage, top-k): the session calls nothing.
"""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
import torch

from attnlab.engine.options import RunOptions
from attnlab.session import Session
from tests.support.tiny import assert_same_trace
from tests.support.tiny import build_tiny_model as make

SRC, TGT = "the black cat sees the dog", "le chat noir"
TOGGLES = {
    "temperature 0.5": RunOptions(temperature=0.5),
    "temperature 3": RunOptions(temperature=3.0),
    "scale off": RunOptions(scale=False),
    "pre-norm": RunOptions(norm="pre"),
    "8 heads": RunOptions(n_heads=8),
    "padding": RunOptions(pad_to=12),
    "mask cell": RunOptions().toggled_mask_cell("dec.1.self", 2, 0),
    "positions off": RunOptions(positional=False),
    "residual off": RunOptions(residual=False),
    "causal encoder": RunOptions().with_causal("enc.self", True),
}


@pytest.mark.parametrize("label", list(TOGGLES))
def test_a_toggle_after_a_run_equals_a_full_rerun(label):
    model = make()
    model.trace(SRC, TGT, RunOptions())  # the run before the toggle
    toggled = model.trace(SRC, TGT, TOGGLES[label])
    fresh = make().trace(SRC, TGT, TOGGLES[label])  # a model that never ran: nothing to reuse
    assert_same_trace(toggled, fresh)
    assert toggled.options == fresh.options


def test_a_temperature_change_reuses_every_stored_entry():
    model = make()
    first = model.trace(SRC, TGT, RunOptions())
    _ = first["enc.0.self.masked"]  # a host copy made before the toggle stays valid after it
    hotter = model.trace(SRC, TGT, RunOptions(temperature=2.0))
    assert hotter is not first and hotter.options.temperature == 2.0 and first.options.temperature == 1.0
    for name, value in first.entries.items():
        if name != "probs":
            assert hotter.entries[name] is value, name
    assert hotter["enc.0.self.masked"] is first["enc.0.self.masked"]
    torch.testing.assert_close(hotter["probs"], torch.softmax(first["logits"] / 2.0, dim=-1), rtol=0, atol=0)
    assert "reused" in hotter.info and "reused" not in first.info


def test_anything_else_or_changed_weights_run_again():
    model = make()
    first = model.trace(SRC, TGT, RunOptions())
    assert model.trace(SRC, TGT, RunOptions(scale=False)).entries["enc.0.self.q"] is not first.entries["enc.0.self.q"]
    model.trace(SRC, TGT, RunOptions())
    with torch.no_grad():
        model.module.encoder[0].self_attn.w_q.weight.mul_(2.0)  # weights changed in place: no reuse
    again = model.trace(SRC, TGT, RunOptions(temperature=2.0))
    assert "reused" not in again.info
    assert not torch.equal(again["enc.0.self.q"], first["enc.0.self.q"])
    assert "reused" not in model.trace(SRC, "le chat", RunOptions(temperature=2.0)).info  # other text


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


def test_display_only_changes_do_not_run_the_model(qtbot, session):
    model = make()
    with qtbot.waitSignal(session.traceReady, timeout=10000):
        session.set_model(model, SRC, TGT)
    calls = []
    original = model.trace
    model.trace = lambda *a, **k: calls.append(1) or original(*a, **k)
    shown = session.trace
    views = []
    session.viewChanged.connect(views.append)
    session.set_view(head=2)
    session.set_view(colormap="magma")
    session.set_view(top_k=3)
    session.set_stage(session.stages[-1].key)
    qtbot.wait(300)  # past any debounce
    assert not calls and not session.busy and session.trace is shown
    assert [v.head for v in views] == [2, 2, 2] and views[-1].colormap == "magma" and views[-1].top_k == 3
