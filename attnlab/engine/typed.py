"""Sentences as people type them, in the form the classroom models were trained on. Qt-free.

The classroom corpus (training/corpus.py) is lower case, words apart from punctuation by single spaces, no
contractions, only "." and "?" as marks. People type "I don't like the dog!" or "It’s black". `typed_form`
turns what was typed into the corpus form — "i do not like the dog ." and "it is black" — so that the model
reads what it learned, and the tokens the app shows are the ones it reads. No final "." is added: the
translation model was trained with a fifth of its pairs without one on both sides (recipes.py drop_period),
so a sentence typed without it translates as such, as it always did. Only a classroom model's text is
changed (its metadata says which language each side is in); an imported model reads what was typed.

`UNSURE_BELOW` is where a greedy choice counts as unsure (the cue in `attnlab translate`/`generate`, the
output stage and LiveModel.generate's trace.info).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from attnlab.engine.tokenizer import clean_text

UNSURE_BELOW = 0.5  # a greedy choice below this probability is shown as unsure

_APOSTROPHES = re.compile(r"[\u2019\u2018\u02bc\u2032\u0060\u00b4]")  # ’ ‘ ʼ ′ ` ´ -> '
_STOPS = re.compile(r"(?:\.\s*){2,}|\u2026|!+")  # "...", "…", "!" -> "."
_DROPPED = re.compile(r"[^\w\s'.?-]|_")  # marks the corpus never has: , ; : " ( ) …
_MARKS = re.compile(r"\s*([.?])\s*")  # "dog." -> "dog ."

# English contractions the corpus spells out (its sentences say "do not", "it is", "i am")
_NOT = {"don't": "do not", "doesn't": "does not", "didn't": "did not", "isn't": "is not", "aren't": "are not"}
_NOT |= {"wasn't": "was not", "weren't": "were not", "haven't": "have not", "hasn't": "has not"}
_IS = ("it", "he", "she", "that", "there", "this")  # "it's" is "it is" (a noun's 's is its owner: girl's)
_SUFFIXES = {"'m": " am", "'re": " are", "'ve": " have"}
_CONTRACTION = re.compile(r"\b(\w+)('m|'re|'ve|'s|n't)\b")


def _expand(match: re.Match) -> str:
    word, ending = match.group(1), match.group(2)
    whole = word + ending
    if ending == "n't":
        return _NOT.get(whole, whole)
    if ending == "'s":
        return f"{word} is" if word in _IS else whole
    return word + _SUFFIXES[ending]


def typed_form(text: str, language: str) -> str:
    """`text` as the classroom corpus writes it. `language`: "English" (contractions spelled out) or another
    corpus language (French: elisions such as l'homme stay)."""
    text = _APOSTROPHES.sub("'", clean_text(text)).lower()
    text = _DROPPED.sub(" ", _STOPS.sub(".", text))
    if language == "English":
        text = _CONTRACTION.sub(_expand, text)
    return " ".join(_MARKS.sub(r" \1 ", text).split())


def classroom_language(metadata: Mapping, role: str) -> str | None:
    """The corpus language a classroom model reads on a side of role "encoder" or "decoder" (from its
    metadata: corpus side "English -> French" or "French"); None for any other model."""
    corpus = metadata.get("corpus") if metadata.get("classroom_model") else None
    side = corpus.get("side") if isinstance(corpus, Mapping) else None
    if not isinstance(side, str) or not side.strip():
        return None
    languages = [part.strip() for part in side.split("->")]
    return languages[0] if role != "decoder" or len(languages) == 1 else languages[-1]


def percent_below(prob: float, limit: float = UNSURE_BELOW) -> str:
    """`prob` as a percentage that reads as below `limit`: 0.31 -> '31%', 0.497 -> '49.7%' (not '50%')."""
    for places in range(4):
        text = f"{prob:.{places}%}"
        if float(text.rstrip("%")) < limit * 100:
            return text
    return f"{prob:.4%}"


def unsure_notice(unsure: list[tuple[str, float]], limit: int = 4) -> str:
    """One line on the greedy choices below UNSURE_BELOW: [("vous", 0.31)] -> 'Unsure: the model chose “vous”
    with only 31% probability (under 50%); the output may be wrong there.'"""
    under = f"{UNSURE_BELOW:.0%}"
    if len(unsure) == 1:
        piece, prob = unsure[0]
        chosen = f"“{piece}” with only {percent_below(prob)} probability (under {under})"
    else:
        shown = [f"“{piece}” ({percent_below(prob)})" for piece, prob in unsure[:limit]]
        if len(unsure) > limit:
            shown.append(f"{len(unsure) - limit} more")
        chosen = ", ".join(shown[:-1]) + f" and {shown[-1]}, each with under {under} probability"
    return f"Unsure: the model chose {chosen}; the output may be wrong there."
