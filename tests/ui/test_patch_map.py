"""The patching map window (issue 37): run A pinned, run B current; the map fills row by row on the Session's
worker, its cells equal the recovery of individual patched runs, a click opens that patched run (the banner
says what was patched), and a patch from A between runs of other lengths is refused in one line."""

from __future__ import annotations

import math

import pytest

from attnlab.engine.options import RunOptions
from attnlab.present import facts, patching
from attnlab.session_patching import patch_from_pinned
from tests.support.tiny import WINDOW_WAIT_MS, build_tiny_model

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py

OTHER = "the small dog sees the cat"  # as many words as the window's sentence


LAYERS = {"decoder-only": dict(n_encoder_layers=0, n_decoder_layers=2), "encoder-decoder": dict(n_decoder_layers=2)}


def pinned_pair(qtbot, open_window, tiny_model, arch="decoder-only"):
    win = open_window(tiny_model(arch, seed=5, **LAYERS[arch]))
    s = win.session
    qtbot.waitUntil(lambda: s.trace is not None and not s.busy, timeout=WINDOW_WAIT_MS)
    s.pin()
    s.set_src(OTHER, debounce=False)
    if arch == "encoder-decoder":
        s.set_tgt(s.tgt, debounce=False)  # the same decoder input as A's, typed: it no longer follows the source
    qtbot.waitUntil(lambda: not s.busy and s.trace is not s.pinned, timeout=WINDOW_WAIT_MS)
    return win, s


def test_the_map_fills_and_its_cells_are_individual_patched_runs(qtbot, open_window, tiny_model):
    win, s = pinned_pair(qtbot, open_window, tiny_model)
    win.open_patch_map()
    window = win.patch_map_window
    window.kind.setCurrentIndex(1)  # head output: layer × head
    window.fill()
    qtbot.waitUntil(lambda: window.map is not None and window.map.finished, timeout=WINDOW_WAIT_MS)
    made = window.map
    assert window.heatmap.record["matrix"].shape == made.values.shape
    fresh = tiny_model("decoder-only", seed=5, **LAYERS["decoder-only"])
    clean, corrupted = patching.logit_diff(s.pinned, made.answer), patching.logit_diff(s.trace, made.answer)
    for row, column in ((0, 0), (1, len(made.cells[1]) - 1)):
        single = fresh.trace(OTHER, None, RunOptions(patch=(made.cells[row][column],)))
        expected = patching.recovery(patching.logit_diff(single, made.answer), clean, corrupted)
        got = made.values[row, column]
        assert (math.isnan(expected) and math.isnan(got)) or abs(got - expected) < 1e-6
    window.open_cell(1, 0)
    qtbot.waitUntil(lambda: not s.busy and bool(s.trace.options.patch), timeout=WINDOW_WAIT_MS)
    assert s.trace.options.patch == (made.cells[1][0],)
    assert "patched from run A: dec.1.self.context head 1" in facts.untrained_banner(s.trace)
    assert "patched" in patching.answer_text(s.pinned, s.trace, s.trace, made.answer)
    window.close()


def test_a_patch_from_a_run_of_another_length_is_refused_in_one_line(qtbot, open_window, tiny_model):
    win, s = pinned_pair(qtbot, open_window, tiny_model)
    s.set_src("the cat", debounce=False)
    qtbot.waitUntil(lambda: not s.busy, timeout=WINDOW_WAIT_MS)
    with qtbot.waitSignal(s.failed, timeout=WINDOW_WAIT_MS) as said:
        assert patch_from_pinned(s, "dec.1.out", "position", None, 1) is False
    assert said.args[0].startswith("run A has") and "same length" in said.args[0] and "\n" not in said.args[0]


def test_a_head_patched_from_a_through_the_session_resumes_at_its_layer(qtbot, open_window, tiny_model):
    _win, s = pinned_pair(qtbot, open_window, tiny_model, "encoder-decoder")
    assert s.pinned.config is s.trace.config and len(s.pinned["tgt.ids"]) == len(s.trace["tgt.ids"])
    assert patch_from_pinned(s, "dec.1.cross.context", "head", 2, None)
    qtbot.waitUntil(lambda: not s.busy and bool(s.trace.options.patch), timeout=WINDOW_WAIT_MS)
    assert s.trace.info.get("resumed_from") == "dec.1"
    assert "dec.1.cross.context head 3" in facts.untrained_banner(s.trace)


def test_build_tiny_model_is_the_fixture():  # the helper the window tests build their models with
    assert build_tiny_model("decoder-only", n_encoder_layers=0).config.has_decoder


def test_the_compare_panels_menu_and_drop_patch_b_from_a(qtbot, open_window, tiny_model):
    win, s = pinned_pair(qtbot, open_window, tiny_model)
    s.set_stage(next(st.key for st in s.stages if st.key.startswith("dec.1.self")))
    qtbot.waitUntil(lambda: not s.busy, timeout=WINDOW_WAIT_MS)
    win.refresh()
    row = win.compare_panel()._rows[0]
    assert row.gestures.entry  # the entry the row shows
    menu = row.gestures.menu_for(2)
    assert [a.text() for a in menu.actions()] == [text for _part, text in patching.MENU_PARTS]
    menu.actions()[2].trigger()  # Patch this layer from A: the layer's output row at position 2
    qtbot.waitUntil(lambda: not s.busy and bool(s.trace.options.patch), timeout=WINDOW_WAIT_MS)
    assert [p.words() for p in s.trace.options.patch] == ["dec.1.out at position 2"]
    row.gestures.dropped(1)  # a cell of A dropped on B's row 1
    qtbot.waitUntil(lambda: not s.busy and len(s.trace.options.patch) == 2, timeout=WINDOW_WAIT_MS)
    assert s.trace.options.patch[1].position == 1


def test_the_output_bars_say_the_answers_logit_difference_before_and_after_the_patch(qtbot, open_window, tiny_model):
    win, s = pinned_pair(qtbot, open_window, tiny_model)
    before = s.trace
    assert patch_from_pinned(s, "dec.1.out", "layer", None, None)
    qtbot.waitUntil(lambda: not s.busy and bool(s.trace.options.patch), timeout=WINDOW_WAIT_MS)
    assert s.unpatched is before
    s.set_stage(next(st.key for st in s.stages if st.key.startswith("out.")))
    qtbot.waitUntil(lambda: not s.busy, timeout=WINDOW_WAIT_MS)
    win.refresh()
    note = win.compare_panel()._note.text()
    answer = patching.default_answer(s.pinned, before)
    expected = patching.answer_text(s.pinned, before, s.trace, answer)
    assert expected.split(":")[1].split(",")[0] in note and "patched: dec.1.out" in note
