"""The app's second text box for models that read sentence pairs (BERT, RoBERTa): it appears as "Sentence B"
only for them, a text typed there becomes sentence B (token type 1) of the run, and emptying it goes back to
one sentence. A decoder-only model shows no such box."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("attnlab.checkpoints.hf")

from tests.ui.test_app_imported import WAIT, open_in_app  # noqa: E402

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def test_bert_shows_a_sentence_b_box_whose_text_is_the_second_segment(qtbot, tmp_path):
    w = open_in_app(qtbot, tmp_path, "bert", "the cat sat.")
    bar = w.inputs
    assert bar.tgt.isVisible() and bar.tgt_label.text() == "Sentence &B:"
    assert not bar.generate.isVisible()
    one = w.session.trace["src.ids"].tolist()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_tgt("a quick dog!", debounce=False)
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    trace = w.session.trace
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "bert"))
    assert trace["src.ids"].tolist() == auto("the cat sat.", "a quick dog!")["input_ids"]
    types = torch.tensor(auto("the cat sat.", "a quick dog!")["token_type_ids"])
    assert 1 in types.tolist()
    table = w.session.model.module.src_type_embed.weight  # [2, d]
    assert torch.allclose(trace["src.type"].cpu(), table[types].detach().cpu())  # [S, d]: sentence B's rows
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_tgt("", debounce=False)
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    assert w.session.trace["src.ids"].tolist() == one


def test_a_decoder_only_model_has_no_second_box(qtbot, tmp_path):
    w = open_in_app(qtbot, tmp_path, "gpt2", "the cat sat.")
    assert not w.inputs.tgt.isVisible()
    assert w.inputs.src_label.text() == "&Prompt:"


def test_an_input_longer_than_the_model_reads_is_named_in_the_banner(qtbot, tmp_path):
    w = open_in_app(qtbot, tmp_path, "bert", "the cat sat.")
    assert "reads at most" not in w.banner.text()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_src(" ".join(["the cat sat on the mat."] * 30), debounce=False)
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    assert len(w.session.trace["src.ids"]) == 64
    assert "reads at most 62" in w.banner.text() and w.banner_box.isVisible()
