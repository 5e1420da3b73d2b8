"""Temperature you can see (issue 32): while only the temperature changes, the probability axis stays, so the
bars at T = 2 are drawn visibly flatter than at T = 0.5; a lesson step can fix the axis at 0–1."""

from __future__ import annotations

import pytest
from PySide6 import QtCore

from attnlab.checkpoints import load_bundled
from attnlab.engine.options import RunOptions
from attnlab.present.lessons import lesson_toml, parse_lesson
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.stages import panel_class_for
from tests.support.tiny import shown_widget

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
SRC, TGT = "the black cat sees the small dog", "le chat noir voit le"


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


def tallest_bar_px(panel) -> float:
    """The drawn length, in screen pixels, of the top (orange) bar: its scene rectangle mapped into the view."""
    plot = panel._plot
    scene_rect = panel._top_bar.mapRectToScene(panel._top_bar.boundingRect())
    return plot.viewportTransform().mapRect(scene_rect).width()


def draw_at(panel, model, temperature: float) -> tuple[float, tuple[float, float], float]:
    trace = model.trace(SRC, TGT, RunOptions(temperature=temperature))
    stage = next(s for s in stages_for(trace) if s.kind == "probs")
    panel.show_stage(trace, stage, ViewState(top_k=8))
    panel._plot.getPlotItem().getViewBox().prepareForPaint()  # the transform it will paint with
    data = panel.shown_data()
    return float(data["values"][0]), data["x_range"], tallest_bar_px(panel)


def test_the_bars_at_t2_are_flatter_than_at_t05_on_the_same_axis(qtbot, translation):
    panel = shown_widget(qtbot, panel_class_for("probs")(), 800, 500)
    assert not panel.fixed_axis.isChecked()
    sharp_p, sharp_axis, sharp_px = draw_at(panel, translation, 0.5)
    flat_p, flat_axis, flat_px = draw_at(panel, translation, 2.0)
    assert flat_p < sharp_p  # softmax(z / 2) puts less on the top token than softmax(z / 0.5) (a fact of softmax)
    assert flat_axis == sharp_axis  # only the temperature changed: the axis stayed
    # drawn: the top bar's pixel length follows its probability on the one axis (the old rescaling to 0–0.14
    # drew the T = 2 bar nearly as long as the T = 0.5 one)
    assert flat_px < 0.8 * sharp_px
    assert flat_px / sharp_px == pytest.approx(flat_p / sharp_p, rel=0.05)
    back_p, back_axis, back_px = draw_at(panel, translation, 0.5)
    assert back_axis == sharp_axis and back_px == pytest.approx(sharp_px, abs=1)


def test_a_new_distribution_still_gets_its_own_axis(qtbot, translation):
    panel = shown_widget(qtbot, panel_class_for("probs")(), 800, 500)
    draw_at(panel, translation, 2.0)
    panel.fixed_axis.setChecked(True)
    assert panel.shown_data()["x_range"][1] > 1.0  # the fixed 0–1 axis
    panel.fixed_axis.setChecked(False)
    _p, axis, _px = draw_at(panel, translation, 2.0)
    assert axis[1] < 1.0  # chosen again for this distribution (the fixed axis was let go)


def test_a_lesson_step_sets_the_fixed_axis(qtbot, translation, tmp_path):
    text = (
        'title = "t"\nmodel = "bundled:translation"\nsrc = "the dog bites the man"\n'
        '[[step]]\nstage = "out.probs"\nfixed_axis = true\nnote = "fixed"\n'
        '[[step]]\nstage = "out.probs"\nnote = "as left"\n'
        '[[step]]\nstage = "out.probs"\nfixed_axis = false\nnote = "free"\n'
    )
    lesson = parse_lesson(text)
    assert [s.fixed_axis for s in lesson.steps] == [True, None, False]
    assert parse_lesson(lesson_toml(lesson)) == lesson  # written back as it was read
    with pytest.raises(ValueError, match="fixed_axis"):
        parse_lesson(text.replace("fixed_axis = true", 'fixed_axis = "yes"'))

    from attnlab.ui.window.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    try:
        with qtbot.waitSignal(window.session.traceReady, timeout=60000):
            window.session.set_model(translation, SRC, TGT)
        from attnlab.ui.window.lesson_actions import LessonPlayer

        player = LessonPlayer(window)
        player.start(lesson)
        fixed = window.panel_for("probs").fixed_axis
        assert fixed.isChecked()
        player.go(1)
        assert fixed.isChecked()  # a step without the key leaves it as it was
        player.go(2)
        assert not fixed.isChecked()
    finally:
        window.set_presenting(False)
        window.errors.uninstall()
        window.session.shutdown()
        window.close()
    QtCore.QCoreApplication.processEvents()
