"""What the paint speed-ups keep (issue 10) must never go stale: a label that keeps its tallest height still shows
the new text, an axis that keeps its text room still shows the new tick labels, the output bars' value labels
that skip an unchanged anchor still sit where the new value says, and the navigator that skips unchanged titles
still renames the changed ones. Each test changes the input and asserts on the items' data, never on time."""

from __future__ import annotations

import pytest
from PySide6 import QtCore
from PySide6.QtWidgets import QLabel

from attnlab.engine.options import RunOptions
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.stages import panel_class_for
from attnlab.ui.window.steady import SteadyHeight, TextHeights
from tests.support.tiny import shown_widget

SRC, TGT = "the black cat sees the dog", "le chat noir"
LONG = "A long sentence that wraps over several lines of a narrow label, as the banner's reasons do. " * 3


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", n_encoder_layers=1)


def stage_of(trace, kind):
    return next(s for s in stages_for(trace) if s.kind == kind)


def steady_label_showing_long_text(qtbot) -> tuple[QLabel, SteadyHeight]:
    """A shown 200-px wrapped label under SteadyHeight, fitted to LONG."""
    label = QLabel(wordWrap=True)
    qtbot.addWidget(label)
    steady = SteadyHeight(label)
    label.resize(200, 40)
    label.show()
    qtbot.waitExposed(label)
    label.setText(LONG)
    steady.fit()
    return label, steady


def test_a_steady_label_keeps_its_tallest_height_at_a_width_and_refits_at_a_new_one(qtbot):
    label, steady = steady_label_showing_long_text(qtbot)
    tall = label.minimumHeight()
    assert tall == label.heightForWidth(200) and tall > label.fontMetrics().lineSpacing() * 3
    label.setText("short")
    steady.fit()
    assert label.text() == "short" and label.minimumHeight() == tall  # same width: no shrink, no re-layout
    label.resize(600, tall)  # a new width (the window was resized): room for the recent texts at that width
    qtbot.waitUntil(lambda: label.minimumHeight() < tall)
    assert label.text() == "short"
    assert label.minimumHeight() == height_of(LONG, label, 600) > height_of("short", label, 600)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() / 2)  # zoomed out: start again from this text's height, in the new font
    label.setFont(font)
    assert label.minimumHeight() == label.heightForWidth(600)
    label.setText(LONG)
    steady.fit()
    assert label.minimumHeight() == label.heightForWidth(600) > height_of("short", label, 600)


def height_of(text: str, like: QLabel, width: int) -> int:
    """The height a label like `like` needs for `text` at `width` (Qt's own measure, on a label of its own)."""
    other = QLabel(text, wordWrap=True)
    other.setFont(like.font())
    return other.heightForWidth(width)


def test_a_steady_label_keeps_room_for_its_last_texts_only(qtbot):
    label, steady = steady_label_showing_long_text(qtbot)
    for i in range(TextHeights.RECENT):  # as many shorter texts after it: the long one is forgotten
        label.setText(f"short {i}")
        steady.fit()
    label.resize(300, 40)
    qtbot.waitUntil(lambda: label.width() == 300)
    assert label.minimumHeight() == height_of("short 7", label, 300) < height_of(LONG, label, 300)


def test_the_window_title_and_banner_show_the_new_texts_after_a_toggle(qtbot, model):
    from attnlab.ui.window.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.session.traceReady, timeout=20000):
        win.session.set_model(model, SRC, TGT)
    win.session.set_stage("enc.0.norm1")
    assert "residual off" not in win.stage_title.text()
    with qtbot.waitSignal(win.session.traceReady, timeout=20000):
        win.session.update_options(residual=False)
    assert "residual off" in win.stage_title.text()
    assert "residual" in win.banner.text().lower()  # the untrained-run banner names the reason
    tall = win.stage_title.minimumHeight()
    with qtbot.waitSignal(win.session.traceReady, timeout=20000):
        win.session.update_options(residual=True)
    assert "residual off" not in win.stage_title.text() and "residual" not in win.banner.text().lower()
    assert win.stage_title.minimumHeight() == tall  # the shorter title did not shrink the row above the panel
    win.errors.uninstall()
    win.session.shutdown()


def left_tick_labels(panel) -> list[str]:
    axis = panel._plot.getPlotItem().getAxis("left")
    return [text for _pos, text in axis._tickLevels[0]]


def test_output_bars_new_labels_and_value_anchors_after_the_distribution_changes(qtbot, model):
    p = shown_widget(qtbot, panel_class_for("probs")(), 800, 500)
    p.set_vocabulary(lambda i: f"word{i}")
    p.fixed_axis.setChecked(True)  # a 0–1 axis: a flat distribution's bars end well before its middle
    seen = []
    for temperature in (0.05, 5.0, 0.05):  # one bar near 100 % (label inside), then flat (outside), then back
        trace = model.trace(SRC, TGT, RunOptions(temperature=temperature))
        p.show_stage(trace, stage_of(trace, "probs"), ViewState(top_k=5))
        data = p.shown_data()
        assert left_tick_labels(p) == data["labels"] == [f"word{i}" for i in data["ids"]]
        labels = p._values.labels()
        assert len(labels) == 5
        for i, label in enumerate(labels):
            assert label.inside == data["value_inside"][i]
            assert (label.x, label.y) == (pytest.approx(max(float(data["values"][i]), 0.0)), i)
            assert label.text.strip() == f"{float(data['values'][i]):.1%}"
        # drawn where the labels say: ending at the bar's end when inside, starting there when not
        for label, (_text, rect) in zip(labels, p._values.text_rects(), strict=True):
            end = p._values.sceneTransform().map(QtCore.QPointF(label.x, label.y)).x()
            assert (rect.right() <= end + 1) if label.inside else (rect.left() >= end - 1)
        seen.append(data["value_inside"][0])
    assert seen == [True, False, True]
    width = p._plot.getPlotItem().getAxis("left").width()
    p.set_vocabulary(lambda i: "w")  # narrower labels: the axis keeps its room, the ticks change
    p.show_stage(trace, stage_of(trace, "probs"), ViewState(top_k=5))
    assert left_tick_labels(p) == ["w"] * 5
    assert p._plot.getPlotItem().getAxis("left").width() == width


def test_the_navigator_renames_only_what_changed_and_follows_the_stage(qtbot, model):
    from attnlab.ui.window.navigator import StageNavigator, short_title

    nav = StageNavigator()
    qtbot.addWidget(nav)
    nav.show()
    for residual in (True, False, True):
        trace = model.trace(SRC, TGT, RunOptions(residual=residual))
        stages = stages_for(trace)
        for key in ("enc.0.norm1", "dec.0.ffn"):
            nav.set_stages(stages, key)
            assert nav.current_key() == key
            assert nav._items[key].parent().isExpanded()
        for number, stage in enumerate(stages, 1):
            assert nav._items[stage.key].text(0) == f"{number:>2}. {short_title(stage.title)}"


def focus_curve_points(panel) -> int:
    return sum(len(curve.getData()[0] if curve.getData()[0] is not None else []) for curve in panel._focus_buckets)


def test_token_lines_focus_curves_are_emptied_and_refilled_across_traces(qtbot, model):
    """The focus curves are left alone while nothing is isolated: after a hover ends they must be empty, and a
    hover on the next trace must draw that trace's lines."""
    from attnlab.ui.stages.heads import LINE_THRESHOLD

    p = panel_class_for("lines")()
    qtbot.addWidget(p)
    p.resize(800, 500)
    p.show()
    for residual, query in ((True, 2), (False, 1)):
        trace = model.trace(SRC, TGT, RunOptions(residual=residual))
        p.show_stage(trace, stage_of(trace, "lines"), ViewState())
        assert p.shown_data()["focus_lines"] == [] and focus_curve_points(p) == 0
        p.hover_token("query", query)
        weights = p.shown_data()["weights"]
        expected = {(query, k) for k in range(weights.shape[1]) if weights[query, k] >= LINE_THRESHOLD}
        assert {(q, k) for q, k, _ in p.shown_data()["focus_lines"]} == expected and expected
        assert focus_curve_points(p) == 2 * len(expected)
        p.hover_token(None)
        assert p.shown_data()["focus_lines"] == [] and focus_curve_points(p) == 0


class _LayoutRequests(QtCore.QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def shown_above_a_stage(qtbot, widget_of):
    """A 300 × 300 window: the widget `widget_of(window)` makes, over a label that takes the rest."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    window = QWidget()
    layout = QVBoxLayout(window)
    widget = widget_of(window)
    layout.addWidget(widget)
    layout.addWidget(QLabel("the stage below"), 1)
    qtbot.addWidget(window)
    window.resize(300, 300)
    window.show()
    qtbot.waitExposed(window)
    return window, widget


def test_a_steady_box_keeps_a_new_text_from_laying_out_the_window_unless_it_needs_more_room(qtbot):
    from attnlab.ui.window.steady import SteadyBox

    label = QLabel(wordWrap=True)
    window, box = shown_above_a_stage(qtbot, lambda window: SteadyBox(label))
    label.setText(LONG)
    box.fit()
    qtbot.waitUntil(lambda: label.height() == box.height() > label.fontMetrics().lineSpacing() * 3)
    tall = box.height()
    assert tall == label.heightForWidth(box.width())
    qtbot.wait(20)  # the growth's own layout pass
    requests = _LayoutRequests()
    window.installEventFilter(requests)
    label.setText("short")  # fits: the box keeps its height and the window lays out nothing
    box.fit()
    QtCore.QCoreApplication.processEvents()
    assert requests.count == 0 and box.height() == tall and label.text() == "short"
    label.setText(LONG + LONG)  # needs more room: the box grows and the window lays out again
    box.fit()
    qtbot.waitUntil(lambda: box.height() == label.heightForWidth(box.width()) > tall)
    assert label.height() == box.height()
    window.resize(700, 300)  # a new width: start again from this text's own height there
    qtbot.waitUntil(lambda: box.width() > 600 and box.height() == label.heightForWidth(box.width()))
    box.hide()
    assert not label.isVisible()


def test_alternatives_make_room_for_the_tallest_text_before_it_is_shown(qtbot):
    """A note given the texts a toggle switches between is as tall as the tallest from the start: the first
    switch to it moves nothing, and the text shown is still the one asked for."""
    from attnlab.ui.stages.common import Note

    window, note = shown_above_a_stage(qtbot, Note)
    short, long = "short", LONG + LONG
    note.show_text(short)
    qtbot.waitUntil(lambda: note.height() < note.fontMetrics().lineSpacing() * 2)  # without: one line
    note.show_text(short, alternatives=(short, long))
    twin = QLabel(long, wordWrap=True)
    twin.setFont(note.font())
    qtbot.waitUntil(lambda: note.minimumHeight() == twin.heightForWidth(note.width()))
    qtbot.wait(20)  # the growth's own layout pass
    height, requests = note.height(), _LayoutRequests()
    window.installEventFilter(requests)
    note.show_text(long, alternatives=(short, long))
    QtCore.QCoreApplication.processEvents()
    assert note.text() == long and note.height() == height and note.minimumHeight() == height


def test_the_stage_title_makes_room_for_the_longest_headings_of_its_stage_list(tiny_model):
    from attnlab.ui.window.main_window import longest_headings, stage_heading

    stages = stages_for(tiny_model("encoder-decoder").trace(SRC, TGT))
    headings = longest_headings(stages, 3)
    shown_length = {stage_heading(s): len(s.group) + len(s.title) + len(s.key) for s in stages}
    assert len(set(headings)) == 3 and set(headings) <= set(shown_length)
    shortest_chosen = min(shown_length[h] for h in headings)
    assert all(length <= shortest_chosen for h, length in shown_length.items() if h not in headings)
    assert shortest_chosen > min(shown_length.values())
