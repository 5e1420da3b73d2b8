"""Panels that list tokens at ~2,000 positions (issue 23: long inputs): the token chips are one list view that
paints the visible chips (no widget per token), and every panel with a position window draws exactly the
window's rows with the trace's values of those positions, reads only those rows, and moves with its range bar."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtWidgets
from PySide6.QtCore import QPoint, Qt

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present.position_range import MIN_ROWS
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.controls.position_range import PositionRangeBar
from attnlab.ui.plots.axes import CategoryAxis
from attnlab.ui.stages import panel_class_for
from attnlab.ui.stages.common import PanelHeatmap
from attnlab.ui.stages.token_chips import ChipList, ChipRole

T = 2000
pytestmark = pytest.mark.usefixtures("isolated_settings")


@pytest.fixture(scope="module")
def trace(tiny_model):
    model = tiny_model("decoder-only", n_decoder_layers=1, n_heads=2, max_len=T + 8, positional="learned")
    rng = np.random.default_rng(0)
    ids = [int(i) for i in rng.integers(4, model.tgt_tokenizer.vocab_size, T - 1)]
    return model.trace("", ids, RunOptions())


def stage_of(trace, kind):
    return next(s for s in stages_for(trace) if s.kind == kind)


def make_panel(qtbot, kind, trace, view: ViewState | None = None):
    panel = panel_class_for(kind)()
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_stage(trace, stage_of(trace, kind), view or ViewState())
    qtbot.wait(30)  # the resize re-fit runs on the next turn of the event loop
    return panel


def first_shown(chips: ChipList) -> int:
    """The row of the first chip in view (probing down the first line of chips, past the gaps)."""
    x = chips.spacing() + 2
    for y in range(0, chips.delegate.size.height() + 4 * chips.spacing(), 4):
        index = chips.indexAt(QPoint(x, y))
        if index.isValid():
            return index.row()
    return -1


def test_the_token_chips_are_one_view_not_a_widget_per_token(qtbot, trace):
    panel = make_panel(qtbot, "tokens", trace)
    tokens = trace[names.side_entry("tgt", "tokens")]
    ids = trace.numpy(names.side_entry("tgt", "ids"))
    assert len(tokens) == T and panel.shown_data()["count"] == T
    assert len(panel.findChildren(QtWidgets.QWidget)) < 40  # a handful of widgets, not one per token
    chips = panel.findChild(ChipList, "tokenChips")
    assert chips is not None and chips.model().rowCount() == T
    assert chips.verticalScrollBar().maximum() > 0  # 2,000 chips do not fit: they scroll
    assert first_shown(chips) == 0
    for position in (1500, T - 1):
        chips.scroll_to_position(position)
        qtbot.wait(10)
        assert first_shown(chips) > 0  # scrolled away from the first chip
        index = chips.indexAt(chips.visualRect(chips.model().index(position)).center())
        assert index.row() == position and chips.viewport().rect().contains(chips.visualRect(index).center())
        chip = index.data(ChipRole)
        assert chip.piece == tokens[position] and chip.token_id == int(ids[position])
        assert index.data(Qt.ItemDataRole.DisplayRole) == chip.printable
        assert f"position {position}" in index.data(Qt.ItemDataRole.ToolTipRole)


WINDOWED = {
    # kind: (the shown data's matrix record, the trace entry of those rows)
    "embed": (lambda d: d, lambda stage: names.side_entry("tgt", "embed")),
    "input": (lambda d: d, lambda stage: names.side_entry("tgt", "input")),
    "pos": (lambda d: d, lambda stage: names.side_entry("tgt", "pos")),
    "ffn": (lambda d: d["hidden"], lambda stage: names.ffn_entry(stage.layer, "hidden")),
    "addnorm": (lambda d: d["before"], lambda stage: names.norm_entry(names.norm(stage.layer, stage.norm), "in")),
}


@pytest.mark.parametrize("kind", sorted(WINDOWED))
def test_a_windowed_panel_draws_exactly_the_windows_rows(qtbot, trace, kind):
    record_of, entry_of = WINDOWED[kind]
    stage = stage_of(trace, kind)
    name = entry_of(stage)
    panel = make_panel(qtbot, kind, trace)
    bar = panel.findChild(PositionRangeBar, "positionRange")
    assert bar is not None and bar.isVisible()
    window = panel.windowing.window
    assert window is not None and not window.whole and window.start == 0 and MIN_ROWS <= window.size < T
    assert name not in trace._host  # only the window's rows were read, never the whole [T, …] entry
    full = trace.numpy(name)  # [T, …] (read here, after the panel, to compare)
    record = record_of(panel.shown_data())
    np.testing.assert_array_equal(record["matrix"], full[: window.size])
    assert record["rows"][0].startswith("0 ") and len(record["rows"]) == window.size

    with qtbot.waitSignal(panel.positionsChanged) as moved:
        bar.start.setValue(1234)
    start, size = moved.args
    assert (start, size) == (1234, window.size)
    qtbot.wait(30)  # a busy machine may lay the panel out again: the rows that fit, hence the window, can change
    size = panel.windowing.window.size
    record = record_of(panel.shown_data())
    np.testing.assert_array_equal(record["matrix"], full[1234 : 1234 + size])
    assert record["rows"][0].startswith("1234 ")
    assert panel.windowing.window.start == 1234
    maps = [m for m in panel.findChildren(PanelHeatmap) if m.isVisible() and "matrix" in m.record]
    assert maps and all(m._left.first == 1234 for m in maps)  # numbered rows count from the window's start
    if kind == "addnorm":  # the bars under the maps count (or name) the window's positions, not 0, 1, …
        ticks = panel._mean_plot.getPlotItem().getAxis("bottom")._tickLevels[0]
        assert ticks[0][0] == 0 and ticks[0][1].startswith("1234")


def test_the_window_persists_from_the_view_and_is_clamped(qtbot, trace):
    panel = make_panel(qtbot, "ffn", trace, ViewState(positions=(10**6, 0)))
    window = panel.windowing.window
    assert window.stop == T and window.size < T  # past the end: the last window
    hidden = trace.numpy(names.ffn_entry(stage_of(trace, "ffn").layer, "hidden"))
    np.testing.assert_array_equal(panel.shown_data()["hidden"]["matrix"], hidden[window.start :])


def test_the_logit_lens_windows_its_columns(qtbot, trace):
    panel = make_panel(qtbot, "lens", trace)
    window = panel.windowing.window
    assert window is not None and not window.whole
    probs = trace.numpy(names.LENS_PROBS)  # [L + 1, T, k]
    shown = panel.shown_data()
    np.testing.assert_array_equal(shown["lens"]["matrix"], probs[:, : window.size, 0])
    panel.windowing.bar.slider.setValue(900)
    shown = panel.shown_data()
    np.testing.assert_array_equal(shown["lens"]["matrix"], probs[:, 900 : 900 + window.size, 0])
    assert len(shown["cell_texts"][0]) == window.size


def test_short_inputs_show_every_position_and_no_range_bar(qtbot, tiny_model):
    model = tiny_model("decoder-only", n_decoder_layers=1)
    short = model.trace("", "the black cat sees the dog", RunOptions())
    panel = make_panel(qtbot, "ffn", short)
    assert panel.windowing.window.whole and not panel.windowing.bar.isVisible()
    hidden = short.numpy(names.ffn_entry(stage_of(short, "ffn").layer, "hidden"))
    np.testing.assert_array_equal(panel.shown_data()["hidden"]["matrix"], hidden)


def test_the_window_follows_a_newly_selected_position_once(qtbot, trace):
    panel = make_panel(qtbot, "embed", trace)
    stage = stage_of(trace, "embed")
    size = panel.windowing.window.size
    panel.show_stage(trace, stage, ViewState(position=1500))  # picked on the output stage
    window = panel.windowing.window
    assert window.start <= 1500 < window.stop and window.size == size
    embed = trace.numpy(names.side_entry("tgt", "embed"))
    np.testing.assert_array_equal(panel.shown_data()["matrix"], embed[window.start : window.stop])
    # the same selection again does not pull back a window the person moved away
    panel.show_stage(trace, stage, ViewState(position=1500, positions=(100, size)))
    assert panel.windowing.window.start == 100


def test_in_the_app_the_window_persists_from_stage_to_stage(qtbot, tiny_model):
    from attnlab.ui.window.main_window import MainWindow

    model = tiny_model("decoder-only", n_decoder_layers=1, n_heads=2, max_len=T + 8, positional="learned")
    window = MainWindow()
    qtbot.addWidget(window)
    try:
        window.resize(1280, 900)
        window.show()
        qtbot.waitExposed(window)
        text = " ".join(["the", "cat", "sees", "dog"] * (T // 4))  # T words: the model keeps max_len of them
        with qtbot.waitSignal(window.session.traceReady, timeout=120000):
            window.session.set_model(model, text)
        trace = window.session.trace
        ffn, addnorm = stage_of(trace, "ffn"), stage_of(trace, "addnorm")
        window.session.set_stage(ffn.key)
        qtbot.wait(50)
        panel = window.current_panel()
        panel.windowing.bar.start.setValue(700)  # the person types 700 into the spin box
        assert window.session.view.positions[0] == 700
        window.session.set_stage(addnorm.key)
        qtbot.wait(50)
        other = window.current_panel()
        assert other is not panel and other.windowing.window.start == 700
        x_in = trace.numpy(names.norm_entry(names.norm(addnorm.layer, addnorm.norm), "in"))
        shown = other.shown_data()["before"]
        np.testing.assert_array_equal(shown["matrix"], x_in[700 : 700 + len(shown["rows"])])
        assert shown["rows"][0].startswith("700 ")
    finally:
        window.errors.uninstall()
        window.session.shutdown()
        window.close()


def test_numbered_ticks_count_from_the_windows_first_position(qtbot):
    axis = CategoryAxis("left")
    axis.set_labels(None, 40)
    axis.set_first(1234)
    assert axis.tickStrings([0.0, 6.0], 1.0, 1.0) == ["1234", "1240"]
    ((step, values),) = axis.tickValues(-0.5, 39.5, 200.0)  # 5 px a row: a tick every few rows
    assert step > 1 and values and all((1234 + v) % step == 0 for v in values)  # round position numbers


def test_the_range_bar_moves_by_keyboard(qtbot, trace):
    panel = make_panel(qtbot, "embed", trace)
    bar = panel.windowing.bar
    size = panel.windowing.window.size
    assert bar.slider.focusPolicy() != Qt.FocusPolicy.NoFocus and bar.start.focusPolicy() != Qt.FocusPolicy.NoFocus
    step = bar.start.singleStep()
    assert 1 <= step <= size
    qtbot.keyClick(bar.start, Qt.Key.Key_Up)  # ↑ on the spin box: an eighth of a window on
    assert panel.windowing.window.start == step
    qtbot.keyClick(bar.slider, Qt.Key.Key_Up)  # ↑ on the slider: the same step
    assert panel.windowing.window.start == 2 * step
    bar.start.lineEdit().selectAll()
    qtbot.keyClicks(bar.start, str(T - size))  # the last window's first position, typed, then Enter
    qtbot.keyClick(bar.start, Qt.Key.Key_Return)
    assert panel.windowing.window.stop == T
    embed = trace.numpy(names.side_entry("tgt", "embed"))
    np.testing.assert_array_equal(panel.shown_data()["matrix"], embed[T - size :])


def test_the_positional_curves_follow_the_window(qtbot, tiny_model):
    model = tiny_model("decoder-only", n_decoder_layers=1, n_heads=2, max_len=T + 8)  # sinusoidal positions
    rng = np.random.default_rng(1)
    sinus = model.trace("", [int(i) for i in rng.integers(4, model.tgt_tokenizer.vocab_size, T - 1)], RunOptions())
    panel = make_panel(qtbot, "pos", sinus, ViewState(positions=(1500, 0)))
    window = panel.windowing.window
    assert window.start == 1500 and not window.whole
    shown = panel.shown_data()
    pe = sinus.numpy(names.side_entry("tgt", "pos"))  # [T, d]
    assert shown["kind"] == "sinusoidal"  # recognised from the window's rows at their own positions
    for dim, values in shown["curves"].items():
        np.testing.assert_array_equal(values, pe[window.rows, dim])
    for curve, dim in zip(panel._curves, shown["dims"], strict=False):  # the drawn sinusoid at x = position - start
        xs, ys = curve.getData()
        on_tokens = np.isclose(xs, np.round(xs))
        np.testing.assert_allclose(
            ys[on_tokens], pe[window.start + np.round(xs[on_tokens]).astype(int), dim], atol=1e-4
        )


def test_a_panel_does_not_keep_its_trace_alive(qtbot, tiny_model):
    import gc
    import weakref

    model = tiny_model("decoder-only", n_decoder_layers=1, n_heads=2, max_len=200)
    short = model.trace("", [5] * 150, RunOptions())
    panel = make_panel(qtbot, "embed", short)
    assert not panel.windowing.window.whole
    gone = weakref.ref(short)
    model.reuse.runs.clear()  # the model's own run cache holds its last run
    del short
    gc.collect()
    assert gone() is None
    panel.windowing.bar.start.setValue(3)  # moving the window of a trace that is gone draws nothing, and no error


@pytest.mark.parametrize("kind", ["tokens", "embed", "input", "pos", "ffn", "addnorm", "lens"])
def test_a_dropped_panel_is_freed_at_once_not_by_the_garbage_collector(qtbot, kind):
    """No reference cycle through the window helper: the garbage collector may run on the session's worker
    thread (engine/live.py release_device_memory), and a QWidget it deletes there aborts the process."""
    import gc
    import weakref

    gc.disable()
    try:
        panel = panel_class_for(kind)()
        gone = weakref.ref(panel)
        del panel
        assert gone() is None  # freed by its reference count, on this (the GUI) thread
    finally:
        gc.enable()
