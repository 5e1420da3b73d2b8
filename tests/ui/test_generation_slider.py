"""The generation timeline in the window: after Generate the slider appears with one stop per cached step;
moving it shows the attention map's rows up to that step (and the KV-cache stage that step's cache), redrawing
only; editing the text hides it again."""

import numpy as np
import pytest

from attnlab.engine import names

pytestmark = pytest.mark.usefixtures("isolated_settings")
WAIT = 10000
SITE = names.site(names.layer("dec", 1), "self")


def test_the_slider_scrubs_the_generations_steps(qtbot, open_window, generating_model):
    w = open_window()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_model(generating_model("decoder-only", n_kv_heads=2), "the black cat sees the dog", "")
    slider = w.generation_slider
    assert not slider.isVisible()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        for _ in range(3):
            w.session.generate_next()
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    positions = w.session.timeline()
    assert slider.isVisible() and slider.slider.maximum() == len(positions) - 1 == 2
    w.session.set_stage(names.site_entry(SITE, "weights"))
    whole = w.current_panel().shown_data()["matrix"]
    slider.slider.setValue(0)  # the first step: the prompt's rows
    assert w.session.view.upto == positions[0]
    shown = w.current_panel().shown_data()["matrix"]
    assert shown.shape == (positions[0] + 1, positions[0] + 1)
    assert np.array_equal(shown, whole[: positions[0] + 1, : positions[0] + 1])
    w.session.set_stage(names.site_entry(SITE, "kv_cache"))
    data = w.current_panel().shown_data()
    assert data["position"] == positions[0] and data["groups"] == [[0, 1], [2, 3]]
    assert data["k"]["matrix"].shape[0] == positions[0] + 1
    slider.slider.setValue(2)  # the last stop: every row
    assert w.session.view.upto == -1
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_src("the small dog", debounce=False)
    assert not slider.isVisible()


def test_the_last_stop_names_no_position():
    """The last stop shows every row of the shown run, the chosen token's included: it says 'all rows' rather
    than the last step's position, which the KV-cache stage would contradict (it names the row after it)."""
    from attnlab.ui.controls.generation_slider import step_label

    assert step_label(0, [2, 3, 4]) == "step 0 of 2 · position 2"
    assert step_label(2, [2, 3, 4]) == "step 2 of 2 · all rows"
