"""Panels a class can read: the output bars' labels fit, the fixed 0–1 axis, the position chooser; the all-heads
grid's grammar; the token lines' hover isolation and stated orientation (items 10–12 of issue 11)."""

import numpy as np
import pyqtgraph as pg
import pytest
import torch
from PySide6.QtWidgets import QCheckBox, QComboBox

from attnlab.engine.options import RunOptions
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.stages import panel_class_for

SRC, TGT = "the black cat sees the dog", "le chat noir"


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", n_encoder_layers=1)


def stage_of(trace, kind):
    return next(s for s in stages_for(trace) if s.kind == kind)


@pytest.fixture
def panel(qtbot):
    def make(kind):
        p = panel_class_for(kind)()
        qtbot.addWidget(p)
        p.resize(800, 500)
        p.show()
        qtbot.waitExposed(p)
        return p

    return make


def test_value_labels_stay_inside_the_plot(qtbot, panel, model):
    trace = model.trace(SRC, TGT, RunOptions(temperature=0.1))  # a peaked distribution: one bar near 100 %
    p = panel("probs")
    p.show_stage(trace, stage_of(trace, "probs"), ViewState(top_k=5))
    qtbot.wait(50)  # the view takes its range on the next paint
    view = p._plot.getPlotItem().getViewBox()
    view_rect = view.mapRectToScene(view.boundingRect())
    drawn = p._values.text_rects()
    assert len(drawn) == 5
    for text, rect in drawn:
        assert view_rect.contains(rect), (text, rect, view_rect)
    data = p.shown_data()
    assert data["values"][0] > 0.5 and data["value_inside"][0]  # the long bar carries its label inside


def test_fixed_axis_keeps_zero_to_one_while_temperature_flattens(panel, model):
    p = panel("probs")
    fixed = p.findChild(QCheckBox, "outputFixedAxis")
    fixed.setChecked(True)
    ranges, tops = [], []
    for t in (0.3, 3.0):
        trace = model.trace(SRC, TGT, RunOptions(temperature=t))
        p.show_stage(trace, stage_of(trace, "probs"), ViewState())
        ranges.append(tuple(p._plot.getPlotItem().getViewBox().viewRange()[0]))
        tops.append(p.shown_data()["values"][0])
    assert ranges[0] == pytest.approx(ranges[1]) and ranges[0][0] < 0 < 1 < ranges[0][1] < 1.1
    assert tops[0] > tops[1]  # the flattening is visible against the same axis
    fixed.setChecked(False)
    assert p.shown_data()["x_range"][1] < 1.0 or tops[1] > 0.75  # autoscaled again


def test_position_chooser_lists_positions_and_emits_the_choice(qtbot, panel, model):
    trace = model.trace(SRC, TGT)
    p = panel("probs")
    p.show_stage(trace, stage_of(trace, "probs"), ViewState())
    combo = p.findChild(QComboBox, "outputPosition")
    tokens = list(trace["tgt.tokens"])
    assert combo.count() == len(tokens) and combo.currentIndex() == len(tokens) - 1
    assert combo.itemText(1).startswith("1: ") and tokens[1] in combo.itemText(1)
    with qtbot.waitSignal(p.positionChosen) as got:
        combo.activated.emit(1)
    assert got.args == [1]
    with qtbot.waitSignal(p.positionChosen) as got:
        combo.activated.emit(len(tokens) - 1)
    assert got.args == [-1]  # the last position follows the sentence as it grows
    p.show_stage(trace, stage_of(trace, "probs"), ViewState(position=1))
    assert combo.currentIndex() == 1 and p.shown_data()["position"] == 1
    np.testing.assert_allclose(p.shown_data()["row"], trace["probs"][1].numpy())
    torch.testing.assert_close(torch.tensor(p.shown_data()["values"]), torch.topk(trace["probs"][1], 10).values)


def test_head_grid_grammar_and_no_axis_under_an_empty_slot(panel, model):
    p = panel("heads")
    for n, words in ((1, "1 head ·"), (8, "all 8 heads ·")):
        trace = model.trace(SRC, TGT, RunOptions(n_heads=n))
        p.show_stage(trace, stage_of(trace, "heads"), ViewState())
        assert p.shown_data()["title"].startswith(words)
    grid = p._grid
    # a column axis only under a column whose lowest head is in the last row (8 heads in 3 × 3: not the third);
    # the grid picks its arrangement from its room (head_grid.best_grid_shape)
    rows, cols = grid.arrangement()
    lowest = [grid._views[max(h for h in range(8) if h % cols == j)] for j in range(cols)]
    lowest = [view for view in lowest if grid._views.index(view) // cols == rows - 1]
    assert len(grid._bottom_axes) == len(lowest) == (2 if (rows, cols) == (3, 3) else cols)
    tq = len(trace["src.tokens"])
    for axis, view in zip(grid._bottom_axes, lowest, strict=True):
        assert axis.linkedView() is view and axis.count == tq


def test_lines_queries_left_keys_right_and_hover_isolates_one_token(panel, model):
    trace = model.trace(SRC, TGT)
    p = panel("lines")
    p.show_stage(trace, stage_of(trace, "lines"), ViewState(head=1))
    data = p.shown_data()
    assert data["query_x"] < data["key_x"]
    assert "queries left, keys right" in p._title.text() and "query (left)" in p._note.text()
    assert data["focus"] is None and data["focus_lines"] == []
    assert all(c.opacity() == 1.0 for c in p._buckets)
    p.hover_token("query", 2)
    data = p.shown_data()
    weights = trace["enc.0.self.weights"][1].numpy()
    expected = {(2, k) for k in range(weights.shape[1]) if weights[2, k] >= 0.05}
    assert {(q, k) for q, k, _ in data["focus_lines"]} == expected and expected
    assert all(c.opacity() < 0.5 for c in p._buckets)  # the other lines fade
    p.hover_token("key", 0)
    assert {k for _q, k, _w in p.shown_data()["focus_lines"]} <= {0}
    # the mouse over a query label on the left picks that query
    view = p._plot.getPlotItem().getViewBox()
    n = weights.shape[0]
    p._on_mouse_moved(view.mapViewToScene(pg.Point(-0.2, (4 + 0.5) / n)))
    assert p.shown_data()["focus"] == ("query", 4)
    p._on_mouse_moved(view.mapViewToScene(pg.Point(0.5, 0.5)))  # between the columns: every line again
    assert p.shown_data()["focus"] is None and all(c.opacity() == 1.0 for c in p._buckets)
