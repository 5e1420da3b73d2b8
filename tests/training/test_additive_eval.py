"""Held-out figures of the additive-attention (Bahdanau) GRU model: measured with the translation model's own
functions, on held-out pairs neither model trained on (issue 12, item 10)."""

import json

import pytest
import torch

from attnlab.checkpoints import load_bundled
from attnlab.checkpoints.additive import bundled_additive_path, load_additive
from attnlab.cli import main
from attnlab.training.additive_eval import TRANSLATION_CORPUS_SEED, attention, greedy_ids, held_out_pairs
from attnlab.training.data import source_ids
from attnlab.training.evaluate import exact_match
from attnlab.training.handwritten import sentence_key
from attnlab.training.recipes import TRANSLATION
from attnlab.training.train import split_corpus


@pytest.fixture(scope="module")
def gru():
    if not bundled_additive_path().is_file():
        pytest.skip("resources/bahdanau.safetensors is absent")
    return load_additive()


@pytest.fixture(scope="module")
def pairs(gru):
    return held_out_pairs(gru, 40)[0]


def test_the_pairs_are_held_out_for_both_models(gru):
    chosen, facts = held_out_pairs(gru)
    r = TRANSLATION
    assert TRANSLATION_CORPUS_SEED == load_bundled("translation").metadata["corpus"]["seed"]
    trained_gru, _ = split_corpus(gru.metadata["n_pairs"], gru.metadata["seed"], r.test_fraction, r.split_seed, 2)
    _, translation_test = split_corpus(r.n_pairs, TRANSLATION_CORPUS_SEED, r.test_fraction, r.split_seed, 2)
    seen = {sentence_key(p.src) for p in trained_gru}
    assert chosen and not any(sentence_key(p.src) in seen for p in chosen)
    test_keys = {sentence_key(p.src) for p in translation_test}
    assert all(sentence_key(p.src) in test_keys for p in chosen)
    assert facts["n_translation_held_out"] == len(translation_test)
    assert facts["n_seen_in_gru_training"] == len(translation_test) - len(chosen) > 0


def test_batched_greedy_is_what_translate_gives_one_sentence_at_a_time(gru, pairs):
    texts = [p.src for p in pairs[:24]]
    assert len({len(source_ids(gru.tokenizer, t)) for t in texts}) > 2  # several lengths, so several batches
    batched = [gru.tokenizer.decode(ids) for ids in greedy_ids(gru, texts)]
    assert batched == [gru.translate(t).text for t in texts]


def test_teacher_forced_attention_of_each_pair_is_its_own_unpadded_run(gru, pairs):
    tok = gru.tokenizer
    for pair, att in zip(pairs[:6], attention(gru, pairs[:6]), strict=True):
        src = torch.tensor([source_ids(tok, pair.src)])  # [1, S]
        tgt_in = torch.tensor([[tok.bos_id, *tok.encode(pair.tgt)[1]]])  # [1, T]
        _, weights = gru.module(src, torch.zeros_like(src, dtype=torch.bool), tgt_in)  # [1, T, S]
        assert att.shape == (1, 1, *weights.shape[1:])
        torch.testing.assert_close(att[0, 0], weights[0])
        torch.testing.assert_close(att.sum(-1), torch.ones(att.shape[:-1]))


def test_eval_command_measures_the_gru_file(gru, pairs, capsys):
    assert main(["eval", str(bundled_additive_path()), "--n", "12", "--json", "--threads", "1"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["kind"] == "translation" and figures["attention"] == "additive" and figures["n"] == 12
    right = sum(gru.translate(p.src).text == p.tgt for p in pairs[:12])  # one sentence at a time, as the app
    assert figures["exact_match"] == pytest.approx(right / 12, abs=1e-4)
    assert figures == json.loads(json.dumps(figures))
    best = figures["alignment"]["predicting"]["best"]
    assert (best["layer"], best["head"]) == (0, 0)  # one attention: a single "layer" and "head"
    hand = figures["handwritten"]
    assert hand["n"] == len(hand["sentences"]) and 0 <= hand["exact"] <= hand["n"]
    assert exact_match(gru, pairs[:12])["exact_match"] == figures["exact_match"]


def test_stored_figures_are_the_whole_held_out_set(gru):
    stored = json.loads((bundled_additive_path().parent / "training" / "bahdanau-eval.json").read_text())
    _, facts = held_out_pairs(gru)
    figures = stored["eval"]
    assert figures["n"] == facts["n_translation_held_out"] - facts["n_seen_in_gru_training"]
    assert 0.3 < figures["exact_match"] < 1 and figures["attention"] == "additive"
