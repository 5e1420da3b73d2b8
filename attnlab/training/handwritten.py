"""The hand-written evaluation set of the translation model: sentences a teacher types, not made by the corpus.

resources/training/handwritten-eval.json holds English sentences as people type them (capitals, "tired."
with the period attached, or no period at all) and reference French in the corpus's conventions. Training
never sees them: `split_corpus` drops every generated training pair whose English has the same `sentence_key`
(corpus version 2 on). The figures are the exact match and a word-level accuracy, 1 − (word edit distance /
reference words), summed over the set (1 − word error rate). A model's figures on it: evaluate.handwritten_figures.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

from attnlab.engine.tokenizer import clean_text

HANDWRITTEN_FILE = "training/handwritten-eval.json"  # inside the attnlab.resources package
_WORD = re.compile(r"[\w'-]+|[^\w\s'-]")  # words (with ' and - inside) and single punctuation marks, as BPE cuts
_FINAL = (".", "?")


def words(text: str) -> list[str]:
    """The words of a sentence as the classroom tokenizer cuts them: lower case, punctuation apart."""
    return _WORD.findall(clean_text(text).lower())


def sentence_key(text: str) -> str:
    """What makes two English sentences the same here: the words, without a final . or ?"""
    ws = words(text)
    while ws and ws[-1] in _FINAL:
        ws.pop()
    return " ".join(ws)


@functools.cache
def handwritten_pairs() -> tuple[tuple[str, str, str], ...]:
    """(English as typed, reference French, feature) for each hand-written sentence."""
    text = resources.files("attnlab.resources").joinpath(HANDWRITTEN_FILE).read_text(encoding="utf-8")
    return tuple((s["en"], s["fr"], s["feature"]) for s in json.loads(text)["sentences"])


def handwritten_keys() -> frozenset[str]:
    return frozenset(sentence_key(en) for en, _, _ in handwritten_pairs())


def word_edits(output: list[str], reference: list[str]) -> int:
    """Levenshtein distance between two word lists (insertions, deletions and substitutions of words)."""
    row = list(range(len(reference) + 1))
    for i, out_word in enumerate(output, 1):
        previous, row[0] = row[0], i
        for j, ref_word in enumerate(reference, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (out_word != ref_word))
    return row[-1]


def score(outputs: list[str], references: list[str]) -> dict:
    """Exact match (same words) and word accuracy (1 − edits / reference words, over the whole set)."""
    out_words = [words(o) for o in outputs]
    ref_words = [words(r) for r in references]
    exact = sum(o == r for o, r in zip(out_words, ref_words, strict=True))
    edits = sum(word_edits(o, r) for o, r in zip(out_words, ref_words, strict=True))
    n_words = sum(len(r) for r in ref_words)
    return {
        "exact_match": round(exact / max(len(outputs), 1), 4),
        "exact": exact,
        "n": len(outputs),
        "word_accuracy": round(max(0.0, 1 - edits / max(n_words, 1)), 4),
        "word_edits": edits,
        "reference_words": n_words,
    }
