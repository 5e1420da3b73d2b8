"""Every example sentence in README.md and docs/*.md is one the bundled model knows.

Extraction rule (what counts as an example sentence), applied to the raw Markdown text:
  1. the value of a CLI flag `--src "…"`, `--tgt "…"` or `--prefix "…"`, unless its line names a checkpoint of
     the reader's own (`--checkpoint PATH` outside resources/: that example is about that model, e.g. GPT-2);
  2. the value of a Python keyword argument `src="…"`, `tgt="…"` or `prefix="…"`, and the argument of
     `.translate("…")`;
  3. in prose or code, any other text in double quotes ("…" or “…”) made of at least three words of lower-case
     letters (with ' and - inside words), optionally ending in " ." or " ?": "the black cat sees the small dog".
Strings without any letter ("...") are placeholders, not examples. A sentence deliberately shown as
out-of-domain (one with a character outside rule 3, such as "quantum chromodynamics is 🙂 hard") is not caught
by rule 3 and is not an example of what the model knows.

Matching model: `prefix` values go to the language model (it reads French); everything else goes to the
translation model, whose one vocabulary covers English and French. An example passes when its tokens hold no
`<unk>` AND every word of it occurs in that model's training texts (the BPE splits any unseen word made of
known letters into pieces without `<unk>`, so the first check alone would let "quantum" through).
"""

import functools
import re
from pathlib import Path

import pytest

from attnlab.checkpoints import load_bundled
from attnlab.checkpoints.bundled import bundled_path
from attnlab.training.handwritten import words

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FLAG = re.compile(r'--(src|tgt|prefix)\s+"([^"]*)"')
_OWN_CHECKPOINT = re.compile(r"--checkpoint\s+(?!resources/)\S+")
_KEYWORD = re.compile(r'\b(src|tgt|prefix)="([^"]*)"')
_TRANSLATE = re.compile(r'\.translate\("([^"]*)"\)')
_QUOTED = re.compile(r'["“]([a-zà-ÿœ]+(?:[\'-][a-zà-ÿœ]+)*(?: [a-zà-ÿœ]+(?:[\'-][a-zà-ÿœ]+)*){2,}(?: [.?])?)["”]')


def examples_in(text: str) -> list[tuple[str, str]]:
    """(model name, sentence) for each example sentence in a Markdown text, by the rule above."""
    own_model = [line for line in text.splitlines() if _OWN_CHECKPOINT.search(line)]
    flags = [m for m in _FLAG.findall(text) if not any(f'"{m[1]}"' in line for line in own_model)]
    found = [(kind, s) for kind, s in flags + _KEYWORD.findall(text)]
    found += [("src", s) for s in _TRANSLATE.findall(text)]
    taken = {s for _, s in found}
    found += [("src", s) for s in _QUOTED.findall(text) if s not in taken]
    return [("language" if kind == "prefix" else "translation", s) for kind, s in found if re.search(r"[^\W\d_]", s)]


def documented_examples() -> list[tuple[str, str, str]]:
    return [
        (doc.relative_to(ROOT).as_posix(), model, sentence)
        for doc in DOCUMENTS
        for model, sentence in dict.fromkeys(examples_in(doc.read_text("utf-8")))
    ]


@functools.cache
def model_and_words(name: str):
    """The bundled model and the set of words in the texts it was trained on."""
    from attnlab.training.train import side_texts, split_corpus

    if not bundled_path(name).is_file():
        pytest.skip(f"resources/{name}.safetensors is absent")
    model = load_bundled(name)
    corpus = model.metadata["corpus"]
    train, _ = split_corpus(
        corpus["n_pairs"], corpus["seed"], corpus["test_fraction"], corpus["split_seed"], corpus.get("version", 1)
    )
    side = "tgt" if corpus.get("side") == "French" else "both"
    return model, frozenset(w for text in side_texts(train, side) for w in words(text))


def test_the_extraction_rule_finds_the_examples_it_promises():
    text = (
        'Run `attnlab --src "dog bites man" --tgt "le"`; m.trace(src="the cat sits on the mat .", '
        'tgt="le chat"); m.translate("the dog sees the cat ."); m.generate(prefix="le chat"); '
        'it opens on "the black cat sees the small dog"; toggles "trained" or "enc.0.self"; '
        'src="..."; *"quantum chromodynamics is 🙂 hard"*; “is the cat black ?”'
    )
    assert examples_in(text) == [
        ("translation", "dog bites man"),
        ("translation", "le"),
        ("translation", "the cat sits on the mat ."),
        ("translation", "le chat"),
        ("language", "le chat"),
        ("translation", "the dog sees the cat ."),
        ("translation", "the black cat sees the small dog"),
        ("translation", "is the cat black ?"),
    ]


def test_the_documents_have_examples():
    found = documented_examples()
    assert len(found) >= 5 and {doc for doc, _, _ in found} >= {"README.md"}


@pytest.mark.parametrize(("document", "name", "sentence"), documented_examples())
def test_every_documented_example_is_known_to_its_model(document, name, sentence):
    model, known = model_and_words(name)
    tokenizer = model.src_tokenizer if name == "translation" else model.tgt_tokenizer
    sentence = model.typed_form(sentence, "src" if name == "translation" else "tgt")  # what the model reads
    pieces, ids = tokenizer.encode(sentence)
    assert tokenizer.unk_id not in ids, f"{document}: {sentence!r} has <unk> in {pieces}"
    unknown = [w for w in words(sentence) if w not in known]
    assert not unknown, f"{document}: {sentence!r} uses words the {name} model never saw in training: {unknown}"
