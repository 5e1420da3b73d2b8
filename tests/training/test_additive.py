"""Additive (Bahdanau) attention: the engine against a direct computation, the file round trip, the bundled
model's translations, and the comparison window."""

import math

import numpy as np
import pytest
import torch

import attnlab
from attnlab.checkpoints.additive import (
    AdditiveModel,
    bundled_additive_path,
    is_additive_file,
    load_additive,
    save_additive,
)
from attnlab.checkpoints.errors import CheckpointError
from attnlab.engine.additive import AdditiveConfig, AdditiveSeq2Seq
from attnlab.engine.tokenizer import WordTokenizer

TEXTS = ["the black cat sees the small dog", "le chat noir voit le petit chien"]


@pytest.fixture(scope="module")
def tiny():
    tok = WordTokenizer.train(TEXTS)
    torch.manual_seed(0)
    module = AdditiveSeq2Seq(AdditiveConfig(vocab_size=tok.vocab_size, d_embed=8, d_hidden=12, d_attn=6, max_len=6))
    return AdditiveModel(module, tok)


def test_attention_is_v_tanh_ws_plus_uh(tiny):
    m = tiny.module
    torch.manual_seed(1)
    s, h = torch.randn(2, 12), torch.randn(2, 5, 12)  # [B, d], [B, S, d]
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        weights, context = m.attend(s, h, pad)
    W, U, b_u, v = m.attn_w.weight, m.attn_u.weight, m.attn_u.bias, m.attn_v.weight[0]
    for b in range(2):
        scores = [float((v @ torch.tanh(W @ s[b] + U @ h[b, j] + b_u)).detach()) for j in range(5)]
        allowed = [j for j in range(5) if not pad[b, j]]
        total = sum(math.exp(scores[j]) for j in allowed)
        expected = [math.exp(scores[j]) / total if j in allowed else 0.0 for j in range(5)]
        np.testing.assert_allclose(weights[b].detach().numpy(), expected, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(context[b].detach().numpy(), (weights[b] @ h[b]).detach().numpy(), rtol=1e-5)


def test_greedy_alignment_rows_are_the_teacher_forced_weights(tiny):
    tok = tiny.tokenizer
    result = tiny.translate("the black cat")
    assert result.alignment.shape == (len(result.output_tokens), len(result.source_tokens))
    torch.testing.assert_close(result.alignment.sum(1), torch.ones(result.alignment.shape[0]))
    out_ids = [tok.bos_id] + [tok.vocab.index(t) for t in result.output_tokens if t != "</s>"]
    src = torch.tensor([tok.encode("the black cat")[1] + [tok.eos_id]])
    _, weights = tiny.module(src, torch.zeros_like(src, dtype=torch.bool), torch.tensor([out_ids]))
    torch.testing.assert_close(weights[0, : result.alignment.shape[0]], result.alignment)


def test_file_round_trip_and_bad_files(tiny, tmp_path):
    path = tmp_path / "gru.safetensors"
    save_additive(tiny, path)
    assert is_additive_file(path)
    again = attnlab.load(path)
    for (name, a), (_, b) in zip(tiny.module.state_dict().items(), again.module.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, msg=name)
    assert again.translate("the black cat").output_tokens == tiny.translate("the black cat").output_tokens
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a model")
    with pytest.raises(CheckpointError, match="not a readable safetensors"):
        load_additive(junk)
    assert not is_additive_file(junk)


BUNDLED = bundled_additive_path()
needs_bundled = pytest.mark.skipif(not BUNDLED.is_file(), reason="resources/bahdanau.safetensors not built")


@needs_bundled
def test_bundled_model_translates_training_sentences():
    from attnlab.training.recipes import TRANSLATION
    from attnlab.training.train import split_corpus

    model = attnlab.load_bundled("bahdanau")
    n_pairs = int(model.metadata["n_pairs"])
    train, _ = split_corpus(n_pairs, 0, TRANSLATION.test_fraction, TRANSLATION.split_seed, TRANSLATION.corpus_version)
    short = [p for p in train if len(p.src.split()) <= 6][:20]
    right = sum(model.translate(p.src).text == p.tgt for p in short)
    assert right >= 15, f"only {right} of 20 short training sentences translated exactly"


def test_compare_window_shows_both_alignments(qtbot, tiny, tiny_model):
    from PySide6 import QtWidgets

    from attnlab.present.additive_compare import additive_alignment
    from attnlab.ui.window.additive_view import AdditiveCompareWindow

    transformer = tiny_model("encoder-decoder", n_decoder_layers=2)
    window = AdditiveCompareWindow(tiny, transformer, "the black cat sees the dog")
    qtbot.addWidget(window)
    data = window.shown_data()
    expected = additive_alignment(tiny, "the black cat sees the dog").matrix
    np.testing.assert_array_equal(data["additive"].matrix, expected)
    tr = data["transformer"]
    out_ids = transformer.tokenizer("tgt").encode(tr.text)[1] if tr.text else []
    trace = transformer.trace("the black cat sees the dog", list(out_ids))
    np.testing.assert_allclose(tr.matrix, trace["dec.1.cross.weights"].numpy().mean(0), rtol=1e-6)
    window.findChild(QtWidgets.QComboBox, "crossLayerCombo").setCurrentIndex(0)
    np.testing.assert_allclose(
        window.shown_data()["transformer"].matrix, trace["dec.0.cross.weights"].numpy().mean(0), rtol=1e-6
    )
    assert tr.rows[-1] == "</s>" and tr.matrix.shape == (len(tr.rows), len(tr.cols))
