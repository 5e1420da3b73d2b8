"""The classroom models shipped in resources/: trained, small, accurate on sentences they never saw, and
robust to input from outside their little world. (Training is never run here: `attnlab train` does that.)"""

import math
import random

import pytest
import torch

from attnlab.checkpoints import load_bundled
from attnlab.checkpoints.bundled import bundled_path
from attnlab.engine.options import RunOptions
from attnlab.training.evaluate import (
    alignment_accuracy,
    exact_match,
    greedy_translate,
    held_out_pairs,
    language_figures,
)
from attnlab.training.train import split_corpus

SAMPLE = 120  # the first 120 pairs of the held-out split: a fixed sample
MAX_BYTES = 10 * 1024 * 1024
FAST = RunOptions(record=False, device="cpu")
OUT_OF_DOMAIN = ["quantum chromodynamics is 🙂 hard", "",
                 "".join(random.Random(7).choice("abcdefghijklmnopqrstuvwxyzéàç'-.,;!? 0123456789🙂ßø")
                         for _ in range(500))]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """These runs are small batches: a second thread gains little, and on a busy machine threads that wait for
    each other make them many times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def bundled(name):
    if not bundled_path(name).is_file():
        pytest.skip(f"resources/{name}.safetensors is absent; build it with `attnlab train --model {name}`")
    model = load_bundled(name)
    assert not model.metadata.get("random"), "the bundled file loaded as a random stand-in"
    return model


@pytest.fixture(scope="module")
def translation():
    return bundled("translation")


@pytest.fixture(scope="module")
def language():
    return bundled("language")


@pytest.fixture(scope="module")
def sample(translation):
    return held_out_pairs(translation, SAMPLE)


@pytest.mark.parametrize("name", ["translation", "language"])
def test_file_is_small_and_says_how_it_was_made(name, request):
    model = request.getfixturevalue(name)
    assert bundled_path(name).stat().st_size <= MAX_BYTES
    assert {"corpus", "training", "eval"} <= set(model.metadata)
    assert model.metadata["training"]["steps"] >= 1


def test_the_sample_was_never_trained_on(translation, sample):
    corpus = translation.metadata["corpus"]
    train, _ = split_corpus(corpus["n_pairs"], corpus["seed"], corpus["test_fraction"], corpus["split_seed"])
    seen = {p.src for p in train}
    assert len(sample) == SAMPLE and not any(p.src in seen for p in sample)


def test_translation_exact_match_on_held_out_sentences(translation, sample):
    figures = exact_match(translation, sample)
    assert figures["exact_match"] >= 0.95, figures["examples_of_errors"]


def test_some_cross_attention_head_aligns_words(translation, sample):
    al = alignment_accuracy(translation, sample)
    assert al["n_aligned_words"] > 3 * SAMPLE
    best = al["predicting"]["best"]
    assert best["accuracy"] >= 0.80, al["predicting"]


def test_batched_evaluation_matches_what_the_app_shows(translation, sample):
    """The fast batched decoder used for the figures gives the same words as LiveModel.translate."""
    pairs = sample[:3]
    batched = greedy_translate(translation, [p.src for p in pairs])
    for pair, ids in zip(pairs, batched, strict=True):
        assert translation.translate(pair.src) == translation.tgt_tokenizer.decode(ids)


def test_translation_generation_stops(translation, sample):
    traces = list(translation.generate(sample[0].src, max_new_tokens=40, options=FAST))
    assert traces[-1].info["finished"] and traces[-1].info["next_token"] == "</s>"
    capped = list(translation.generate(sample[1].src, max_new_tokens=3, options=FAST))
    assert len(capped) == 3 and not capped[-1].info["finished"]


@pytest.mark.parametrize("text", OUT_OF_DOMAIN, ids=["emoji", "empty", "random"])
def test_translation_runs_on_anything(translation, text):
    trace = translation.trace(text, "le chat", RunOptions(device="cpu"))
    probs = trace["probs"]
    assert torch.isfinite(probs).all()
    assert torch.allclose(probs.sum(-1), torch.ones(probs.shape[0]), atol=1e-4)
    assert torch.isfinite(trace["dec.2.cross.weights"]).all()
    steps = list(translation.generate(text, max_new_tokens=12, options=FAST))
    assert 1 <= len(steps) <= 12
    assert all(torch.isfinite(t["probs"]).all() for t in steps)


def test_language_model_predicts_held_out_french(language, sample):
    """Random sentences from a grammar stay partly unpredictable (which noun comes next?), so a perfect model
    is far from 100%; an untrained one scores about 0% and a perplexity near the vocabulary size (1000)."""
    figures = language_figures(language, [p.tgt for p in sample])
    assert figures["next_token_accuracy"] >= 0.40
    assert figures["perplexity"] <= 10.0


def test_language_model_continues_a_prompt_and_stops(language, sample):
    for pair in sample[:5]:
        prompt = " ".join(pair.tgt.split()[:2])
        steps = list(language.generate(prefix=prompt, max_new_tokens=40, options=FAST))
        text = steps[-1].info["generated"]
        assert steps[-1].info["finished"] and text.startswith(prompt), text
        assert text.endswith("."), text  # every corpus sentence ends with a period
    capped = list(language.generate(prefix="le", max_new_tokens=2, options=FAST))
    assert len(capped) == 2 and not capped[-1].info["finished"]


@pytest.mark.parametrize("text", OUT_OF_DOMAIN, ids=["emoji", "empty", "random"])
def test_language_model_runs_on_anything(language, text):
    trace = language.trace(text, options=RunOptions(device="cpu"))
    assert torch.isfinite(trace["probs"]).all()
    assert math.isclose(float(trace["probs"][-1].sum()), 1.0, abs_tol=1e-4)
    steps = list(language.generate(prefix=text, max_new_tokens=5, options=FAST))
    assert 1 <= len(steps) <= 5 and all(torch.isfinite(t["probs"]).all() for t in steps)
