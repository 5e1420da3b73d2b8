"""Soak: 10,000 toggles, each followed by a synchronous repaint, in one window, without a crash.

(PySide6 6.12.0 on CPython 3.11 corrupted None's refcount after a few thousand paints and killed the process;
this is the test that would catch such a thing again.) Traces are precomputed with different run options so
the loop measures drawing, not the model: each step switches the trace (a toggle), the head, the colour map
or the stage, redraws the current panel and repaints it; every 25th step goes through the whole window
(navigator, schematic, explanation, status bar) and a real control is flipped.
"""

import os
import time

import pytest
from PySide6.QtCore import QSettings

from attnlab.engine.options import RunOptions
from attnlab.present.stages import stages_for
from attnlab.ui.window.main_window import MainWindow

STEPS = int(os.environ.get("SOAK_STEPS", 10_000))
WINDOW_EVERY = 25
VARIANTS = [
    RunOptions(),
    RunOptions(norm="pre"),
    RunOptions(n_heads=8),
    RunOptions(scale=False),
    RunOptions(positional=False),
    RunOptions(residual=False),
    RunOptions(pad_to=12, temperature=2.0),
    RunOptions().with_causal("dec.self", False).toggled_mask_cell("enc.0.self", 0, 1),
]
COLORMAPS = ["viridis", "magma", "CET-D1", "RdBu_r"]


@pytest.mark.soak
def test_ten_thousand_toggles_and_repaints(qtbot, tmp_path, monkeypatch, generating_model):
    monkeypatch.setenv("ATTNLAB_SETTINGS", str(tmp_path / "settings.ini"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path))
    model = generating_model()
    sentences = [("the black cat sees the small dog", "le chat noir"), ("dog bites man", "le"), ("", "")]
    traces = [model.trace(src, tgt, opts) for opts in VARIANTS for src, tgt in sentences]
    stages = {id(t): stages_for(t) for t in traces}

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    s = w.session
    s.model = model
    s.modelChanged.emit(model)
    start = time.perf_counter()
    repaints = window_updates = 0
    stage_index = 0
    for step in range(STEPS):
        trace = traces[(step * 7) % len(traces)]  # the toggle: another option set / sentence
        trace_stages = stages[id(trace)]
        if step % 10 == 0:
            stage_index += 7
        stage = trace_stages[stage_index % len(trace_stages)]
        heads = trace.n_heads
        if step % WINDOW_EVERY == 0:  # the whole window, as after a real traceReady
            s.trace, s.stages, s.stage_key = trace, trace_stages, stage.key
            s.set_view(head=step % heads, colormap=COLORMAPS[(step // WINDOW_EVERY) % len(COLORMAPS)])
            w.controls.scale.blockSignals(True)
            w.controls.scale.setChecked(not w.controls.scale.isChecked())
            w.controls.scale.blockSignals(False)
            w._on_trace(trace)
            window_updates += 1
        else:
            view = s.view.__class__(head=step % heads, colormap=s.view.colormap)
            panel = w.panel_for(stage.kind)
            w.panel_stack.setCurrentWidget(panel)
            panel.show_stage(trace, stage, view)
            panel.repaint()
        repaints += 1
        assert w.current_panel().shown_data(), stage.key
    seconds = time.perf_counter() - start
    print(f"\nsoak: {repaints} toggles + repaints ({window_updates} through the whole window) in {seconds:.1f} s")
    assert repaints == STEPS and w.isVisible()
    assert w.navigator.current_key() == s.stage_key
    s.shutdown()
