"""The desktop app with the position-bias families: a tiny BLOOM, MPNet and T5 folder (random weights, their own
tokenizer files, nothing downloaded) opened in the MainWindow like File → Open and stepped through EVERY
stage: each panel shows content (the bias stage included) and each explanation follows the model: ALiBi's
slopes, T5's buckets, no ÷√dₖ for T5."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from attnlab.ui.window.main_window import MainWindow  # noqa: E402
from tests.families.test_hf_alibi_folders import bloom_folder, mpnet_vocab, t5_folder  # noqa: E402
from tests.ui.test_app_imported import WAIT, close, step_everywhere  # noqa: E402

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def build(kind: str, folder) -> None:
    if kind == "bloom":
        bloom_folder(folder)
    elif kind == "t5":
        t5_folder(folder, "gated-gelu", as_json=True)  # its sentinels: the app's generated prefix may pick one
    else:
        cfg = transformers.MPNetConfig(
            vocab_size=mpnet_vocab(folder, as_json=False),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=48,
        )
        transformers.MPNetForMaskedLM(cfg).eval().save_pretrained(str(folder))


def open_in_app(qtbot, tmp_path, kind: str, src: str, tgt: str) -> MainWindow:
    folder = tmp_path / kind
    folder.mkdir()
    build(kind, folder)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_src(src, debounce=False)
        if tgt:
            w.session.set_tgt(tgt, debounce=False)
        w.open_checkpoint(str(folder))
    qtbot.waitUntil(
        lambda: not w.session.busy and w.session.model is not None and w.session.model.name == kind,
        timeout=WAIT,
    )
    return w


@pytest.mark.parametrize("kind", ["bloom", "mpnet", "t5"])
def test_every_stage_of_each_position_bias_family_shows_content(qtbot, tmp_path, kind):
    w = open_in_app(qtbot, tmp_path, kind, "the quick brown fox jumps over the lazy dog", "a quick fox")
    try:
        seen = step_everywhere(w)
        site = "dec.0.self" if kind != "mpnet" else "enc.0.self"
        data, page = seen[f"{site}.bias"]
        assert data["kind"] == "bias" and data["matrix"].shape[0] > 1
        assert ("buckets" in data) is (kind != "bloom")
        if kind == "bloom":
            assert "m<sub>h</sub> · j" in page
        else:
            assert "b<sub>h</sub>[bucket(j − i)]" in page
        if kind == "t5":
            assert "never divides by √d<sub>k</sub>" in seen["enc.1.self.scaled"][1]
            assert "enc.0.self.bias" in seen and "dec.0.cross.bias" not in seen
    finally:
        close(w)
