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
OUT_OF_DOMAIN = [
    "quantum chromodynamics is 🙂 hard",
    "",
    "".join(random.Random(7).choice("abcdefghijklmnopqrstuvwxyzéàç'-.,;!? 0123456789🙂ßø") for _ in range(500)),
]


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


@pytest.fixture(scope="module")
def language_sample(language):
    """The language model's own held-out pairs (its corpus version is not the translation model's)."""
    return held_out_pairs(language, SAMPLE)


@pytest.mark.parametrize("name", ["translation", "language"])
def test_file_is_small_and_says_how_it_was_made(name, request):
    model = request.getfixturevalue(name)
    assert bundled_path(name).stat().st_size <= MAX_BYTES
    assert {"corpus", "training", "eval"} <= set(model.metadata)
    assert model.metadata["training"]["steps"] >= 1


def test_the_sample_was_never_trained_on(translation, sample):
    corpus = translation.metadata["corpus"]
    train, _ = split_corpus(
        corpus["n_pairs"], corpus["seed"], corpus["test_fraction"], corpus["split_seed"], corpus.get("version", 1)
    )
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


def test_translation_answers_what_a_teacher_types_first(translation):
    """The hand-written set (never trained on): sentences typed as people type them."""
    from attnlab.training.evaluate import handwritten_figures

    figures = handwritten_figures(translation)
    wrong = [s for s in figures["sentences"] if not s["correct"]]
    assert figures["n"] >= 60 and figures["exact_match"] >= 0.9 and figures["word_accuracy"] >= 0.95, wrong


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("we are tired", "nous sommes fatigués"),
        ("i am tired", "je suis fatigué"),
        ("they are tired", "ils sont fatigués"),
        ("the mother of the boy loves him .", "la mère du garçon l'adore ."),
        ("the black cat sees the small dog", "le chat noir voit le petit chien"),
        ("the cat sits on the mat .", "le chat est assis sur le tapis ."),
    ],
)
def test_the_sentences_of_issue_11(translation, src, expected):
    assert translation.translate(src) == expected


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


def test_language_model_predicts_held_out_french(language, language_sample):
    """Random sentences from a grammar stay partly unpredictable (which noun comes next?), so a perfect model
    is far from 100%; an untrained one scores about 0.1% and a perplexity above the vocabulary size (1000)."""
    figures = language_figures(language, [p.tgt for p in language_sample])
    assert figures["next_token_accuracy"] >= 0.40
    assert figures["perplexity"] <= 10.0


def test_language_model_continues_a_prompt_and_stops(language, language_sample):
    for pair in language_sample[:5]:
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


# ---- the training pieces (no trained model needed) ----------------------------------------------------
def test_bpe_is_deterministic_round_trips_and_splits_unknown_words():
    from attnlab.training.bpe import train_bpe
    from attnlab.training.corpus import generate_pairs

    texts = [t for p in generate_pairs(300, 1) for t in (p.src, p.tgt)]
    tok = train_bpe(texts, 400)
    assert tok.vocab == train_bpe(list(reversed(texts)), 400).vocab  # same texts, any order: same vocabulary
    assert tok.vocab_size == 400 and tok.vocab[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert all(tok.decode(tok.encode(t)[1]) == t for t in texts)
    pieces, ids = tok.encode("zebraquantum")  # never seen, but every letter is known
    assert len(pieces) > 1 and tok.unk_id not in ids and pieces[1].startswith("##")
    assert tok.encode("🙂")[1] == [tok.unk_id]


def test_word_piece_spans_cover_every_piece_in_order():
    from attnlab.training.bpe import train_bpe
    from attnlab.training.corpus import generate_pairs
    from attnlab.training.data import word_piece_spans

    pairs = generate_pairs(300, 2)
    tok = train_bpe([t for p in pairs for t in (p.src, p.tgt)], 150)  # small: many words split
    for p in pairs[:50]:
        spans = word_piece_spans(tok, p.tgt)
        assert len(spans) == len(p.tgt.split())
        assert [i for span in spans for i in span] == list(range(len(tok.encode(p.tgt)[1])))
        assert all(spans)


def test_batches_group_by_length_and_shift_the_target():
    from attnlab.training.data import length_batches, make_batch

    rng = random.Random(0)
    examples = [([5] * rng.randint(2, 20) + [2], [1] + [6] * rng.randint(2, 20) + [2]) for _ in range(300)]
    batches = length_batches(examples, 200, random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(300))
    for b in batches:
        longest = max(max(len(examples[i][0]), len(examples[i][1])) for i in b)
        assert longest * len(b) <= 200 or len(b) == 1
    batch = make_batch([examples[i] for i in batches[0]], pad_id=0)
    for row, i in enumerate(batches[0]):
        tgt = examples[i][1]
        assert batch.tgt_in[row, : len(tgt) - 1].tolist() == tgt[:-1]
        assert batch.tgt_out[row, : len(tgt) - 1].tolist() == tgt[1:]
        assert batch.tgt_pad[row].tolist() == [j >= len(tgt) - 1 for j in range(batch.tgt_in.shape[1])]
        assert batch.src_pad[row].sum() == batch.src.shape[1] - len(examples[i][0])


def test_learning_rate_warms_up_then_decays():
    from attnlab.training.recipes import TRANSLATION
    from attnlab.training.train import learning_rate

    lrs = [learning_rate(s, TRANSLATION) for s in range(1, 3 * TRANSLATION.warmup)]
    peak = lrs.index(max(lrs)) + 1
    assert peak == TRANSLATION.warmup and math.isclose(max(lrs), TRANSLATION.peak_lr)
    assert all(a < b for a, b in zip(lrs[: peak - 1], lrs[1:peak], strict=True))
    assert all(a > b for a, b in zip(lrs[peak - 1 : -1], lrs[peak:], strict=True))
