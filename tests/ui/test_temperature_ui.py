"""Temperature in the UI (issue 11, item 14): the spin box and slider cannot reach a value the API refuses,
and the probabilities at both ends of their range are finite and sum to 1."""

from __future__ import annotations

import torch

from attnlab.engine import names
from attnlab.engine.options import temperature_problems
from attnlab.ui.window.main_window import MainWindow

WAIT = 20000


def test_temperature_controls_stay_in_range_and_probabilities_are_never_nan(qtbot, generating_model):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_model(generating_model(), "the black cat sees the dog", "le chat")
    spin, slider = win.controls.temperature, win.controls.temperature_slider
    assert spin.minimum() > 0 and temperature_problems(spin.minimum()) == temperature_problems(spin.maximum()) == []
    assert temperature_problems(slider.minimum() / 100) == [] and temperature_problems(slider.maximum() / 100) == []
    for typed in (0.0, -1.0, float("nan"), float("inf"), 1e-40, 1e9):
        spin.setValue(typed)  # a spin box clamps what it is given (NaN leaves it unchanged)
        assert spin.minimum() <= spin.value() <= spin.maximum()
    for end in (spin.minimum(), spin.maximum()):
        spin.setValue(1.0)
        with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
            spin.setValue(end)
        probs = win.session.trace[names.PROBS]
        assert torch.isfinite(probs).all() and torch.allclose(probs.sum(-1), torch.ones(probs.shape[0]))
        assert win.session.options.temperature == round(end, 2)
    win.errors.uninstall()
    win.session.shutdown()
