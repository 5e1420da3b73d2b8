"""Panels a class can read: the output bars' labels fit, the fixed 0–1 axis, the position chooser; the all-heads
grid's grammar; the token lines' hover isolation and stated orientation (items 10–12 of issue 11)."""

import numpy as np
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
    qtbot.wait(50)  # text items take their place on the next paint
    view = p._plot.getPlotItem().getViewBox()
    view_rect = view.mapRectToScene(view.boundingRect())
    for text in p._values[:5]:
        rect = text.mapRectToScene(text.boundingRect())
        assert view_rect.contains(rect), (text.toPlainText(), rect, view_rect)
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
