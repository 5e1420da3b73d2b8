"""The desktop app with imported models (issue 9), one per family: a tiny random Hugging Face model built from a
config object (nothing downloaded) is saved with its tokenizer files, opened in the MainWindow like File →
Open, and stepped through EVERY stage. Each panel must show content (no "not in this run" message where the
data exists) and each explanation must follow the model's real computation: RMS for RMSNorm, gate and up for
SwiGLU, which Q heads share a K/V head for grouped-query attention, [MASK] predictions for a masked LM."""

from __future__ import annotations

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("attnlab.checkpoints.hf")

from attnlab.engine import names  # noqa: E402
from attnlab.present.explain import explanation_html  # noqa: E402
from attnlab.ui.window.main_window import MainWindow  # noqa: E402
from tests.families.test_hf_models import saved  # noqa: E402  (tiny models with their tokenizer files)

WAIT = 30000
NOT_SHOWN = ("not in this run", "does not say", "No explanation")


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def open_in_app(qtbot, tmp_path, kind: str, text: str) -> MainWindow:
    folder, _reference = saved(tmp_path, kind)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_src(text, debounce=False)
        w.open_checkpoint(str(folder))
    qtbot.waitUntil(
        lambda: (
            not w.session.busy
            and w.session.trace is not None
            and w.session.model is not None
            and w.session.model.name == kind
        ),
        timeout=WAIT,
    )
    assert w.session.src == text
    return w


def step_everywhere(w: MainWindow) -> dict[str, tuple[dict, str]]:
    """Show every stage; return key -> (what the panel drew, the explanation's HTML)."""
    seen = {}
    for stage in w.session.stages:
        w.session.set_stage(stage.key)
        assert w.session.stage_key == stage.key
        panel = w.current_panel()
        data = panel.shown_data()
        html = explanation_html(stage, w.session.trace)
        message = str(data.get("message", ""))
        assert not message, (stage.key, message)
        assert not any(s in html for s in NOT_SHOWN), (stage.key, html)
        seen[stage.key] = (data, html)
    return seen


def close(w: MainWindow) -> None:
    w.errors.uninstall()
    w.session.shutdown()


def test_llama_shows_rms_swiglu_and_which_q_heads_share_a_kv_head(qtbot, tmp_path):
    w = open_in_app(qtbot, tmp_path, "llama", "Hello, world! The cat sat.")
    try:
        trace = w.session.trace
        assert trace.config.norm == "rmsnorm" and trace.config.ffn == "gated" and trace.n_kv_heads == 2
        seen = step_everywhere(w)
        assert {s.title for s in w.session.stages if s.kind == "addnorm"} == {"add & RMSNorm 1", "add & RMSNorm 2"}
        data, html = seen["dec.0.norm1"]
        assert data["kind"] == "rmsnorm" and "RMS" in html and "No mean is subtracted" in html
        rms_in = np.asarray(trace[names.norm_entry("dec.0.norm1", "rms")])  # [T], recorded by the engine
        x_in = np.asarray(trace[names.norm_entry("dec.0.norm1", "in")])  # [T, d]
        eps = trace.config.layer_norm_eps
        np.testing.assert_allclose(rms_in, np.sqrt((x_in**2).mean(axis=1) + eps), rtol=1e-5)
        np.testing.assert_allclose(data["rms"], rms_in)
        data, html = seen["dec.0.ffn"]
        assert data["gated"] and data["activation"] == "silu" and "gate" in html and "W<sub>up</sub>" in html
        np.testing.assert_allclose(data["gate"]["matrix"], trace[names.ffn_entry("dec.0", "gate")], rtol=1e-6)
        np.testing.assert_allclose(data["up"]["matrix"], trace[names.ffn_entry("dec.0", "up")], rtol=1e-6)
        data, html = seen["dec.0.self.qkv"]
        assert data["sharing"] == "K/V head 1 ← Q heads 1, 2 · K/V head 2 ← Q heads 3, 4"
        assert data["sharing"] in html and "half-split" in html
        w.session.set_view(head=3)  # Q head 4 reads K/V head 2 (index 1)
        w.session.set_stage("dec.0.self.qkv")
        data = w.current_panel().shown_data()
        assert data["kv_head"] == 1
        np.testing.assert_allclose(data["k"]["matrix"], trace[names.site_entry("dec.0.self", "k")][1])
        controls = w.controls
        assert "Rotary" in controls.positional.text()
        assert "K/V heads" in controls.heads.toolTip()
        assert [controls.heads.itemData(i) for i in range(controls.heads.count())] == [2, 4, 8, 16]
        assert not controls.enc_causal.isEnabled() and "no encoder" in controls.enc_causal.toolTip()
    finally:
        close(w)


def test_llama_norm_placement_toggle_keeps_the_rms_panel(qtbot, tmp_path):
    w = open_in_app(qtbot, tmp_path, "llama", "The cat sat.")
    try:
        with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
            w.session.update_options(norm="post")
        qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
        w.session.set_stage("dec.1.norm2")
        data = w.current_panel().shown_data()
        assert data["norm"] == "post" and data["kind"] == "rmsnorm" and "message" not in data
        assert "Post-norm" in explanation_html(w.session.stage, w.session.trace)
    finally:
        close(w)


def test_bert_masked_lm_opens_on_the_mask_prediction(qtbot, tmp_path):
    w = open_in_app(qtbot, tmp_path, "bert", "the cat [MASK] on the mat.")
    try:
        trace = w.session.trace
        toks = trace[names.side_entry("src", "tokens")]
        assert "[MASK]" in toks and toks[0] == "[CLS]"
        seen = step_everywhere(w)
        assert "[MASK]" in seen["out.probs"][1]
        _data, html = seen["src.input"]
        assert "token-type" in html and "embedding LayerNorm" in html
        w.session.set_stage("out.probs")
        panel = w.current_panel()
        shown = panel.shown_data()
        assert shown["position"] == toks.index("[MASK]")
        assert "[MASK]" in panel._title.text()  # the heading names the masked position
        assert not w.controls.causal.isEnabled() and "no decoder" in w.controls.causal.toolTip()
    finally:
        close(w)


@pytest.mark.parametrize("kind", ["gpt2", "qwen2", "roberta", "distilbert", "marian"])
def test_every_stage_of_each_family_shows_content(qtbot, tmp_path, kind):
    w = open_in_app(qtbot, tmp_path, kind, "Hello, world! The cat sat.")
    try:
        seen = step_everywhere(w)
        if kind == "qwen2":
            assert "K/V head 1 ← Q heads 1, 2" in seen["dec.0.self.qkv"][1]
        if kind == "gpt2":  # GELU (tanh): no hatched zeros, a LayerNorm with mean and variance
            assert seen["dec.0.ffn"][0]["activation"] == "gelu_tanh"
            assert seen["dec.0.norm1"][0]["kind"] == "layernorm"
        if kind == "marian":  # √d_model scaling is said exactly when the model scales its embeddings
            scaled = w.session.trace.config.scale_embedding
            assert ("multiplied by √d<sub>model</sub>" in seen["src.input"][1]) == scaled
    finally:
        close(w)
