"""The app survives every valid choice of its controls (issue 27): every head count the Heads menu offers
(d_k = 1 included: 128 one-wide heads crashed the app) at every stage, painted; and a storm of random valid
actions (toggles, head counts, stage steps, mask clicks) driven through the real widgets, after which the
window shows exactly the final options.

No sleeps: actions go in batches and the event loop runs between batches (the worker coalesces the runs,
latest request wins). The 16,000-action storm is marked soak; a 1,000-action storm runs by default."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import random

import pytest
from PySide6.QtWidgets import QApplication, QCheckBox

from attnlab.engine.options import head_choices
from tests.support.tiny import build_tiny_model

pytestmark = pytest.mark.usefixtures("isolated_settings")
WAIT = 30000
SMALL = dict(d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, max_len=12)


@pytest.fixture
def win(open_window):
    return open_window(build_tiny_model(**SMALL))


def settle(qtbot, w) -> None:
    """Until every run asked for has come back and been drawn."""
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    QApplication.processEvents()


def choose_heads(w, heads: int) -> None:
    """Pick `heads` in the Heads menu as a person would (the combo's `activated`)."""
    combo = w.controls.heads
    index = combo.findData(heads)
    assert index >= 0, (heads, [combo.itemData(i) for i in range(combo.count())])
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def assert_shows_the_session(w) -> None:
    """The window shows the session's final state: the trace ran with its options, the controls say them, the
    navigator and the panel are on its stage."""
    s = w.session
    config = s.model.config
    assert s.trace.options == s.options.resolved(config)
    assert w.controls.heads.currentData() == s.options.effective_heads(config)
    for name, field in (("scaleCheck", "scale"), ("residualCheck", "residual")):
        assert w.controls.findChild(QCheckBox, name).isChecked() == getattr(s.options, field), name
    assert w.navigator.current_key() == s.stage_key
    panel = w.current_panel()
    assert s.stage is not None and s.stage.kind in panel.kinds
    assert not panel.grab().isNull()


def walk_heads_and_stages(qtbot, w, every_stage_of: set[int]) -> int:
    """Every head count of the Heads menu; at each, every stage (head counts in `every_stage_of`) or the first
    stage of each kind (every panel), each drawn. Returns the number of panels drawn."""
    s = w.session
    drawn = 0
    for heads in head_choices(s.model.config):
        choose_heads(w, heads)
        settle(qtbot, w)
        assert s.trace.n_heads == heads
        kinds: set[str] = set()
        for stage in list(s.stages):
            if heads not in every_stage_of and stage.kind in kinds:
                continue
            kinds.add(stage.kind)
            s.set_stage(stage.key)
            QApplication.processEvents()
            assert stage.kind in w.current_panel().kinds and not w.current_panel().grab().isNull(), stage.key
            drawn += 1
        assert w.isVisible() and w.errors.paint_failures == 0 and w.errors.count == 0, heads
    return drawn


def test_every_head_count_at_every_panel_paints(qtbot, win):
    config = win.session.model.config
    assert head_choices(config)[-1] == config.d_model  # d_k = 1 is offered
    kinds = {stage.kind for stage in win.session.stages}
    assert walk_heads_and_stages(qtbot, win, every_stage_of=set()) == len(head_choices(config)) * len(kinds)


@pytest.mark.soak
def test_every_head_count_at_every_stage_paints(qtbot, win):
    config = win.session.model.config
    drawn = walk_heads_and_stages(qtbot, win, every_stage_of=set(head_choices(config)))
    assert drawn == len(head_choices(config)) * len(win.session.stages)


def mask_click(rng: random.Random, s) -> None:
    """A click on a cell of a mask: a site the trace has, a cell within its tokens."""
    sites = sorted({st.site for st in s.stages if st.site})
    site = rng.choice(sites)
    side = "src.tokens" if site.startswith("enc") else "tgt.tokens"
    n_q = len(s.trace[side]) if side in s.trace else 1
    n_k = len(s.trace["src.tokens"]) if ".cross" in site else n_q
    s.toggle_mask_cell(site, rng.randrange(n_q), rng.randrange(n_k))


def storm(qtbot, w, actions: int, seed: int, batch: int = 40) -> dict[str, int]:
    rng = random.Random(seed)
    s = w.session
    boxes = [b for b in w.controls.findChildren(QCheckBox)]
    choices = head_choices(s.model.config)
    done = {"toggle": 0, "heads": 0, "step": 0, "mask": 0, "clear": 0}
    for i in range(actions):
        kind = rng.choices(list(done), weights=[5, 2, 4, 2, 1])[0]
        if kind == "toggle":
            enabled = [b for b in boxes if b.isEnabled() and b.isVisible()]
            if enabled:
                rng.choice(enabled).click()
        elif kind == "heads":
            choose_heads(w, rng.choice(choices))
        elif kind == "step":
            s.step_stage(rng.choice([-3, -1, 1, 1, 2, 10**9, -(10**9)]))
        elif kind == "mask" and s.stages:
            mask_click(rng, s)
        else:
            s.clear_custom_masks()
        done[kind] += 1
        if i % batch == batch - 1:
            QApplication.processEvents()
    settle(qtbot, w)
    return done


def test_a_thousand_random_actions_leave_the_window_showing_the_final_options(qtbot, win):
    done = storm(qtbot, win, 1000, seed=27)
    assert min(done.values()) > 0, done
    assert win.isVisible() and win.errors.paint_failures == 0 and win.errors.count == 0
    assert_shows_the_session(win)


@pytest.mark.soak
def test_sixteen_thousand_random_actions_leave_the_window_showing_the_final_options(qtbot, win):
    done = storm(qtbot, win, 16_000, seed=16)
    assert sum(done.values()) == 16_000
    assert win.isVisible() and win.errors.paint_failures == 0 and win.errors.count == 0
    assert_shows_the_session(win)
