"""The precision in the app (issue 23): a bf16 folder runs as stored and the status bar says bfloat16; the
toggles panel's Precision combo (generated from the option table) widens the run to float32 and back."""

from __future__ import annotations

import pytest
import torch

import attnlab
from tests.support import hf_tiny

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
WAIT = 15000


def test_the_status_bar_shows_the_precision_the_precision_combo_chose(qtbot, open_window, tmp_path):
    model, _config = hf_tiny.llama()
    folder = tmp_path / "llama-bf16"
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    w = open_window()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):  # no tokenizer files: ids typed as numbers
        w.session.set_model(attnlab.load(folder), "5 17 3 88 42", "5 17 3 88 42")
    assert w.session.trace.options.dtype == "bfloat16"
    assert w.device_label.text().endswith("· bfloat16")
    combo = w.controls.precision
    assert [combo.itemData(i) for i in range(combo.count())] == ["stored", "float32"]
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        i = combo.findData("float32")
        combo.setCurrentIndex(i)
        combo.activated.emit(i)
    assert w.session.options.precision == "float32" and w.session.trace.options.dtype == "float32"
    qtbot.waitUntil(lambda: w.device_label.text().endswith("· float32"), timeout=WAIT)
    assert {p.dtype for p in w.session.model.module.parameters()} == {torch.float32}
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        i = combo.findData("stored")
        combo.setCurrentIndex(i)
        combo.activated.emit(i)
    qtbot.waitUntil(lambda: w.device_label.text().endswith("· bfloat16"), timeout=WAIT)


def test_a_run_too_big_for_the_memory_is_refused_in_one_line_and_the_last_trace_stays(
    qtbot, open_window, tiny_model, monkeypatch
):
    from attnlab.engine import run_budget

    w = open_window(tiny_model())
    shown = w.session.trace
    monkeypatch.setattr(run_budget, "available_on", lambda _device: 1000)
    with qtbot.waitSignal(w.session.failed, timeout=WAIT) as failed:
        w.session.set_src("the small dog sees the black cat", debounce=False)
    message = failed.args[0]
    assert message.startswith("This run needs about ") and "\n" not in message, message
    assert "of memory is available" in message and "no input this long fits" in message
    assert w.session.trace is shown  # the last good trace stays on screen
