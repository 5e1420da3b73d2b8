"""Sentences as people type them: the classroom models read them in the corpus form (engine/typed.py), the
tokens shown are the ones read, the lexicon banner looks at that form, and an unsure greedy choice is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attnlab.checkpoints import load_bundled
from attnlab.engine import names
from attnlab.engine.typed import UNSURE_BELOW, classroom_language, percent_below, typed_form
from attnlab.present.lexicon import lexicon, out_of_domain_text, outside_words
from attnlab.present.unsure import unsure_positions, unsure_sentence
from attnlab.training.handwritten import sentence_key

TYPED_EVAL = Path(__file__).resolve().parents[2] / "resources" / "training" / "typed-eval.json"


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


@pytest.mark.parametrize(
    "typed, read",
    [
        ("I don't like the cake.", "i do not like the cake ."),
        ("She doesn’t have a dog!", "she does not have a dog ."),  # a typographic apostrophe, an exclamation
        ("It's black", "it is black"),  # no final stop added (a fifth of training had none)
        ("I'm in the garden...", "i am in the garden ."),
        ("We're tired, really.", "we are tired really ."),
        ("They aren't here", "they are not here"),
        ("The girl's cat is white.", "the girl's cat is white ."),  # a noun's 's is its owner, not "is"
        ("Are you tired ?", "are you tired ?"),
        ("THE DOG   IS SMALL", "the dog is small"),
        ("the cat sleeps .", "the cat sleeps ."),  # the corpus form stays as it is
        ("", ""),
    ],
)
def test_english_reads_in_the_corpus_form(typed, read):
    assert typed_form(typed, "English") == read
    assert typed_form(read, "English") == read  # reading twice changes nothing


def test_french_keeps_its_elisions():
    assert typed_form("L’homme mange!", "French") == "l'homme mange ."
    assert typed_form("Le Chat", "French") == "le chat"
    assert typed_form("Don't", "French") == "don't"  # English contractions only in English


def test_which_models_read_the_corpus_form(translation, tiny_model):
    assert classroom_language(translation.metadata, "encoder") == "English"
    assert classroom_language(translation.metadata, "decoder") == "French"
    assert classroom_language({"corpus": {"side": "French"}}, "encoder") is None  # not a classroom model
    plain = tiny_model("encoder-decoder")
    assert plain.typed_form("The Cat, don't!", "src") == "The Cat, don't!"  # other models read what was typed
    assert translation.typed_form("The cat, don't!", "src") == "the cat do not ."
    assert translation.typed_form("L’homme", "tgt") == "l'homme"  # the decoder reads French


def test_the_tokens_shown_are_the_ones_the_model_reads(translation):
    typed = "I don't like the cake!"
    trace = translation.trace(typed, "je")
    read = translation.src_tokenizer.tokenize("i do not like the cake .")
    assert trace[names.side_entry("src", "tokens")] == [*read, "</s>"]
    assert translation.translate(typed) == translation.translate("i do not like the cake .")


def test_the_lexicon_banner_reads_the_corpus_form(translation):
    typed = "I don't like the cake!"
    assert outside_words(typed, lexicon("translation"))  # "don't" is no word of the corpus
    assert out_of_domain_text("translation", translation.typed_form(typed, "src")) == ""
    assert "giraffe" in out_of_domain_text("translation", translation.typed_form("The giraffe's happy", "src"))


def test_generate_says_when_a_greedy_choice_is_unsure(translation):
    steps = list(translation.generate("I love you."))  # "you" as an object is outside the corpus grammar
    chosen = []
    for trace in steps:
        probs = trace.read(names.PROBS, -1)  # [V]
        assert trace.info["next_prob"] == pytest.approx(float(probs.max()))
        chosen.append((trace.info["next_token"], trace.info["next_prob"]))
    unsure = [(piece, p) for piece, p in chosen if p < UNSURE_BELOW]
    assert unsure and steps[-1].info["unsure"] == unsure
    assert any(n.startswith("Unsure:") for n in steps[-1].notices)
    sure = list(translation.generate("The dog is big."))
    assert sure[-1].info["unsure"] == [] and not any(n.startswith("Unsure:") for n in sure[-1].notices)


def test_the_output_stage_names_the_unsure_positions(translation):
    trace = translation.trace("I love you.", "j'adorez vous")
    probs = torch.stack([trace.read(names.PROBS, t) for t in range(len(trace["tgt.tokens"]))])  # [T, V]
    expected = [(t, float(p)) for t, p in enumerate(probs.max(dim=-1).values) if p < UNSURE_BELOW]
    found = unsure_positions(trace)
    assert expected and [t for t, _ in found] == [t for t, _ in expected]  # pytest 9 refuses a nested approx
    assert [p for _, p in found] == pytest.approx([p for _, p in expected])
    assert f"{expected[0][0] + 1} ({percent_below(expected[0][1])})" in unsure_sentence(trace)
    assert unsure_sentence(translation.trace("The dog is big.", "le chien est grand")) == ""


def test_the_typed_evaluation_set_is_typed_naturally_and_inside_the_lexicon():
    sentences = json.loads(TYPED_EVAL.read_text(encoding="utf-8"))["sentences"]
    assert len(sentences) >= 40
    words = lexicon("translation")
    keys = [sentence_key(typed_form(s["en"], "English")) for s in sentences]
    assert len(set(keys)) == len(keys)  # no sentence twice
    for s in sentences:
        assert typed_form(s["en"], "English") != s["en"], s  # capitals, marks attached, or contractions
        assert outside_words(typed_form(s["en"], "English"), words) == [], s
        assert s["fr"] == typed_form(s["fr"], "French"), s  # references in the corpus form
    assert sum("'" in s["en"] or "’" in s["en"] for s in sentences) >= 20


@pytest.mark.soak
def test_the_typed_set_is_at_least_90_percent_exact(translation):
    sentences = json.loads(TYPED_EVAL.read_text(encoding="utf-8"))["sentences"]
    exact = sum(translation.translate(s["en"]).split() == s["fr"].split() for s in sentences)
    assert exact / len(sentences) >= 0.9
