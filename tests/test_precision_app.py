"""The precision in the app (issue 23): a bf16 folder runs as stored and the status bar says bfloat16; the
toggles panel's Precision combo (generated from the option table) widens the run to float32 and back."""

from __future__ import annotations

import hf_tiny
import pytest
import torch

import attnlab

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
