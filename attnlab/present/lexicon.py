"""The words a classroom model was trained on, and the words of a sentence outside them (Qt-free).

The lists live in resources/lexicon/<model>.txt (one lower-cased word a line), written from the training
corpus by `python -m attnlab.training.export_lexicon`; the app reads them here and never imports the
training code. A model without a list (any model that is not a bundled classroom model) has no lexicon.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)  # words; numbers and punctuation are not checked


@functools.lru_cache(maxsize=4)
def lexicon(model: str) -> frozenset[str] | None:
    """The training words of classroom model `model` ("translation", "language"); None when it has no list."""
    if not re.fullmatch(r"[a-z_]+", str(model)):
        return None
    try:
        folder = resources.files("attnlab.resources").joinpath("lexicon")
        text = folder.joinpath(f"{model}.txt").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def outside_words(text: str, words: frozenset[str]) -> list[str]:
    """The distinct words of `text` (lower-cased, in order) that are not in `words`. A word with an apostrophe
    ("girl's", "l'arbre") counts as known when it or its pieces are."""
    found: list[str] = []
    for word in WORD.findall(str(text).lower()):
        known = word in words or all(p in words for p in word.split("'") if p)
        if not known and word not in found:
            found.append(word)
    return found


def out_of_domain_text(model: str, text: str, limit: int = 8) -> str:
    """The banner line for a sentence that leaves the classroom model's lexicon ('' when it does not)."""
    words = lexicon(model)
    unknown = outside_words(text, words) if words else []
    if not unknown:
        return ""
    shown = ", ".join(f"“{w}”" for w in unknown[:limit]) + (" …" if len(unknown) > limit else "")
    return (
        f"Out of domain: {shown} {'is' if len(unknown) == 1 else 'are'} not among the words this classroom "
        "model was trained on, so its output for this sentence means little."
    )
