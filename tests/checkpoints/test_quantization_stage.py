"""The quantization view (issue 36.4): for a weight of a bitsandbytes folder, W is the original's tensor, Ŵ
bitsandbytes' own dequantization, |W − Ŵ| their difference; without the original, the stored levels and block
scales; the original's run on the same sentence pinned as A makes Compare's B − A the quantization's doing; and
the window (View → Quantization) shows exactly the view-model's matrices."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("bitsandbytes")

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.hf_folder import read_folder_weights
from attnlab.checkpoints.loader import load_checkpoint
from attnlab.present import compare, quantization
from attnlab.present.stages import stages_for
from attnlab.present.views.model import MessageView
from tests.support.bnb_folders import IDS, bnb_dequantized, original_folder, quantized_folder, transformers_quantized

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.usefixtures("isolated_settings")]
WEIGHT = "model.layers.1.self_attn.q_proj.weight"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("quant-stage")
    original = original_folder(root)
    out = {"original": original}
    for scheme in ("nf4-double", "int8"):
        folder = quantized_folder(original, root, scheme)
        config = json.loads((folder / "config.json").read_text())
        config["_name_or_path"] = str(original)  # as older transformers wrote it: where the model came from
        (folder / "config.json").write_text(json.dumps(config))
        out[scheme] = folder
    return out


@pytest.mark.parametrize("scheme", ["nf4-double", "int8"])
def test_w_w_hat_and_their_difference(folders, scheme):
    model = load_checkpoint(folders[scheme])
    original = quantization.original_of(model.metadata)
    assert original == folders["original"]  # found through config.json's _name_or_path
    assert WEIGHT in quantization.weight_names(model.metadata)
    view = quantization.quantization_view(model.metadata, WEIGHT, original)
    assert not isinstance(view, MessageView)
    w = read_folder_weights(folders["original"], Problems(folders["original"]))[WEIGHT].numpy()
    w_hat = bnb_dequantized(transformers_quantized(folders[scheme]))[WEIGHT].float().numpy()
    shown_w, shown_hat, shown_diff = (m.matrix for m in view.maps)
    np.testing.assert_array_equal(shown_w, w)
    np.testing.assert_array_equal(shown_hat, w_hat)
    np.testing.assert_array_equal(shown_diff, np.abs(w - w_hat))
    assert view.error is not None
    assert view.error.largest == pytest.approx(float(np.abs(w - w_hat).max()))
    assert view.error.relative == pytest.approx(float(np.linalg.norm(w - w_hat) / np.linalg.norm(w)), rel=1e-5)
    assert 0 < view.error.relative < (0.2 if scheme != "int8" else 0.02)


def test_without_the_original_levels_and_block_scales(folders):
    model = load_checkpoint(folders["nf4-double"])
    view = quantization.quantization_view(model.metadata, WEIGHT, None)
    assert not isinstance(view, MessageView) and view.error is None
    codes, scales, w_hat = (m.matrix for m in view.maps)
    stored = read_folder_weights(folders["nf4-double"], Problems(folders["nf4-double"]))
    levels = stored[WEIGHT + ".quant_map"].numpy()
    np.testing.assert_array_equal(view.levels, levels)
    assert set(np.unique(codes)) <= set(levels.tolist())  # every weight one of the 16 levels
    assert scales.shape == (64, 64 // 64)  # a 64-weight block a scale, laid out as the blocks lie in the rows
    reference = bnb_dequantized(transformers_quantized(folders["nf4-double"]))[WEIGHT].numpy()
    np.testing.assert_array_equal(codes * scales.repeat(64, axis=1), reference)  # Ŵ = level × block scale
    np.testing.assert_array_equal(w_hat, reference)


def test_a_model_that_was_not_quantized_says_so(folders):
    view = quantization.quantization_view(load_checkpoint(folders["original"]).metadata, WEIGHT)
    assert isinstance(view, MessageView) and "not quantized" in view.message


def test_the_originals_run_pinned_as_a_makes_b_minus_a_the_quantizations_doing(folders):
    quantized = load_checkpoint(folders["nf4-double"])
    original = quantization.load_original(quantization.original_of(quantized.metadata))
    b = quantized.trace(tgt=IDS)
    a = quantization.original_run(original, "", IDS, b.options)
    assert torch.equal(a["tgt.ids"], b["tgt.ids"])
    weights = next(s for s in stages_for(b) if s.kind == "weights" and s.site == "dec.1.self")
    (entry,) = compare.compare_stage(a, b, weights, head=2)
    np.testing.assert_array_equal(entry.difference, (b["dec.1.self.weights"][2] - a["dec.1.self.weights"][2]).numpy())
    assert np.abs(entry.difference).max() > 1e-4  # 4 bits moved the head's attention


def test_the_window_shows_the_view_and_pins_the_original(folders, open_window, qtbot):
    window = open_window()
    with qtbot.waitSignal(window.session.traceReady, timeout=20000):  # no tokenizer: the prompt is token ids
        window.session.set_model(load_checkpoint(folders["nf4-double"]), " ".join(map(str, IDS)), "")
    from PySide6.QtGui import QAction

    window.findChild(QAction, "quantizationAction").trigger()
    qwindow = window.quantization_window
    panel = qwindow.panel
    panel.weights.setCurrentText(WEIGHT)
    view = quantization.quantization_view(window.session.model.metadata, WEIGHT, folders["original"])
    shown = panel.shown_data()
    assert shown["weight"] == WEIGHT and shown["titles"] == [m.title for m in view.maps]
    for m in view.maps:
        np.testing.assert_array_equal(shown[m.title], m.matrix)
    assert panel.pin_button.isEnabled()
    panel.pin_button.click()
    pinned = window.session.pinned
    assert pinned is not None and pinned is not window.session.trace
    assert torch.equal(pinned["tgt.ids"], window.session.trace["tgt.ids"])
    assert window.session.view.compare == "diff"


def test_the_original_is_found_by_its_id_in_the_hugging_face_cache(folders, tmp_path, monkeypatch):
    from tests.support.hf_cache_files import add_revision, folder_files

    cache = tmp_path / "hub"
    snapshot = add_revision(cache, "org/tiny-llama", folder_files(folders["original"]))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    quantized = tmp_path / "quantized"
    quantized.mkdir()
    for f in folders["nf4-double"].iterdir():
        (quantized / f.name).write_bytes(f.read_bytes())
    config = json.loads((quantized / "config.json").read_text())
    (quantized / "config.json").write_text(json.dumps({**config, "_name_or_path": "org/tiny-llama"}))
    meta = load_checkpoint(quantized).metadata
    assert quantization.original_of(meta) == snapshot
    (quantized / "config.json").write_text(json.dumps({**config, "_name_or_path": "org/not-cached"}))
    assert quantization.original_of(load_checkpoint(quantized).metadata) is None


def test_a_gguf_phrase_is_said_not_shown_as_weights():
    """A GGUF model says what was done in one phrase (no folder to read codes from): the view says it."""
    said = "dequantized from Q4_1 (5 bits per weight) to float32"
    meta = {"quantization": {"method": "gguf", "scheme": "Q4_1", "bits_per_weight": 5.0, "text": said}}
    assert quantization.quantization_text(meta) == said
    view = quantization.quantization_view(meta, WEIGHT)
    assert isinstance(view, MessageView) and said in view.message
    assert quantization.weight_names(meta) == []
