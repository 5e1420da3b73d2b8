"""The LoRA window (issue 35.1): B, A and ΔW of a module, ΔW equal to what peft merged into the weight; the
base model's run pinned as A of Compare; the strength control in the toggles panel."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnlab
from attnlab.engine import names
from attnlab.present import lora
from tests.support.hf_tiny import IDS
from tests.support.lora_tiny import write_adapter

pytest.importorskip("peft")

LORA = {"r": 4, "lora_alpha": 8, "target_modules": ["c_attn"], "fan_in_fan_out": True}
MODULE = "transformer.h.1.attn.c_attn"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory):
    base, adapter, merged = write_adapter(tmp_path_factory.mktemp("lora"), "gpt2", **LORA)
    return base, adapter, merged


def test_delta_is_what_peft_merged(folders):
    base, adapter, merged = folders
    model = attnlab.load(str(adapter))
    view = lora.lora_view(model, MODULE)
    assert isinstance(view, lora.LoraView) and view.rank == 4 and view.scaling == 8 / 4
    base_model, _config = __import__("tests.support.hf_tiny", fromlist=["gpt2"]).gpt2()
    merged_w = dict(merged.named_parameters())[MODULE + ".weight"].detach()
    base_w = dict(base_model.named_parameters())[MODULE + ".weight"].detach()
    np.testing.assert_allclose(view.maps[2].matrix, (merged_w - base_w).numpy(), atol=1e-6)
    assert view.maps[0].matrix.shape == (3 * 32, 4) and view.maps[1].matrix.shape == (4, 32)
    assert "α / r" in view.heading


def test_the_window_shows_the_view_and_pins_the_base(folders, open_window, qtbot):
    from PySide6.QtGui import QAction

    base, adapter, _merged = folders
    window = open_window()
    with qtbot.waitSignal(window.session.traceReady, timeout=20000):  # no tokenizer: the prompt is token ids
        window.session.set_model(attnlab.load(str(adapter)), " ".join(f"#{i}" for i in IDS), "")
    window.findChild(QAction, "loraAction").trigger()
    panel = window.lora_window.panel
    panel.modules.setCurrentText(MODULE)
    shown = panel.shown_data()
    view = lora.lora_view(window.session.model, MODULE)
    assert shown["module"] == MODULE and shown["titles"] == [m.title for m in view.maps]
    for m in view.maps:
        np.testing.assert_array_equal(shown[m.title], m.matrix)
    panel.pin_button.click()
    pinned = window.session.pinned
    assert pinned is not None and pinned.options.adapter_strength == 0.0
    plain = attnlab.load(str(base)).trace(tgt=pinned["tgt.ids"].flatten().tolist())
    assert torch.equal(pinned[names.LOGITS], plain[names.LOGITS])
    assert window.session.view.compare == "diff"


def test_the_strength_control_runs_the_adapter_at_its_value(folders, open_window, qtbot):
    from PySide6 import QtWidgets

    _base, adapter, _merged = folders
    window = open_window()
    with qtbot.waitSignal(window.session.traceReady, timeout=20000):
        window.session.set_model(attnlab.load(str(adapter)), " ".join(f"#{i}" for i in IDS), "")
    spin = window.findChild(QtWidgets.QDoubleSpinBox, "adapterStrengthSpin")
    assert spin is not None and spin.isEnabled()
    with qtbot.waitSignal(window.session.traceReady, timeout=20000):
        spin.setValue(0.0)
    assert window.session.options.adapter_strength == 0.0
    assert window.session.trace.options.adapter_strength == 0.0
