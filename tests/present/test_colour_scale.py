"""The ÷√dₖ step is visible (issue 11, item 2): an attention site's score maps share one colour scale, chosen
in the toggles (`colourScaleCombo`: shared / per panel / fixed range), and the titles follow the scaling toggle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtWidgets import QComboBox

from attnlab.present.stages import FIXED_SCORE_RANGE

WAIT = 20000
SITE = "enc.0.self"


@pytest.fixture
def win(open_window, generating_model):
    return open_window(generating_model(), size=(1200, 800))


def _show(win, kind: str) -> tuple[dict, np.ndarray]:
    win.session.set_stage(f"{SITE}.{kind}")
    panel = win.current_panel()
    data = panel.shown_data()
    image = panel._map.grab().toImage()
    pixels = np.array(image.constBits(), copy=True).reshape(image.height(), image.bytesPerLine())
    return data, pixels


def _choose(win, mode: str) -> None:
    combo = win.findChild(QComboBox, "colourScaleCombo")
    combo.setCurrentIndex(combo.findData(mode))
    combo.activated.emit(combo.currentIndex())
    assert win.session.view.colour_scale == mode


def test_shared_scale_shows_the_division(win):
    assert win.session.view.colour_scale == "shared"
    scores, scores_px = _show(win, "scores")
    scaled, scaled_px = _show(win, "scaled")
    assert scores["levels"] == scaled["levels"]  # one scale for the site
    peak = float(np.abs(scores["matrix"]).max())
    assert scores["levels"] == pytest.approx((-peak, peak))
    dk = win.session.trace[f"{SITE}.q"].shape[-1]
    np.testing.assert_allclose(scaled["matrix"], scores["matrix"] / math.sqrt(dk), rtol=1e-5, atol=1e-6)
    assert not np.array_equal(scores_px, scaled_px)  # the ÷√dₖ map is visibly paler


def test_per_panel_and_fixed_scales(win):
    _choose(win, "panel")
    scores, _ = _show(win, "scores")
    scaled, _ = _show(win, "scaled")
    dk = win.session.trace[f"{SITE}.q"].shape[-1]
    assert scaled["levels"][1] == pytest.approx(scores["levels"][1] / math.sqrt(dk), rel=1e-4)
    _choose(win, "fixed")
    assert (
        _show(win, "scores")[0]["levels"]
        == _show(win, "masked")[0]["levels"]
        == (-FIXED_SCORE_RANGE, FIXED_SCORE_RANGE)
    )


def test_titles_follow_the_scaling_toggle(qtbot, win):
    win.session.set_stage(f"{SITE}.scaled")
    assert "QKᵀ / √dₖ" in win.current_panel().shown_data()["title"]
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.controls.scale.setChecked(False)
    win.session.set_stage(f"{SITE}.scaled")
    title = win.current_panel().shown_data()["title"]
    assert "√dₖ" in title and "/ √dₖ" not in title and "switched off" in title
    stage = next(s for s in win.session.stages if s.key == f"{SITE}.scaled")
    assert "switched off" in stage.title and "switched off" in win.explanation.toPlainText()
