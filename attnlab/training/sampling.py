"""The random choices the corpus's sentence templates share (corpus.py's and everyday.py's): which nouns,
adjectives and verbs fit together, and a random noun phrase, subject, tense, negation, adverb or place.

Below both template modules, so that corpus.py can list everyday.py's templates without either importing the
other. Every choice goes through the `random.Random` a caller passes: a corpus is the same for the same seed.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable
from typing import cast

from attnlab.training.grammar import (
    NP,
    Both,
    Pron,
    Subject,
)
from attnlab.training.lexicon import (
    ADJECTIVES,
    ADVERBS,
    NOUNS,
    PREPOSITIONS,
    VERBS,
    Adj,
    Adverb,
    Noun,
    Verb,
)

_KINDS = ("anim", "pers", "obj", "food", "drink", "furn", "veh", "place")
_LOCATIVE = ("on", "under", "in", "near", "behind", "in front of", "next to")
_POSSESSIVE = ("my", "your", "his", "her", "our", "their")
_TRANSITIVE = [v for v in VERBS.values() if v.obj and not v.etre]
_INTRANSITIVE = [v for v in VERBS.values() if not v.obj and not v.etre]
_MOTION = [v for v in VERBS.values() if v.etre]


@functools.cache
def _nouns(tags: frozenset[str]) -> list[Noun]:
    return [n for n in NOUNS.values() if n.tags & tags]


@functools.cache
def _adjectives(kind: str, pre: bool) -> list[Adj]:
    return [a for a in ADJECTIVES.values() if kind in a.kinds and a.pre == pre]


def _kind(s: Subject) -> str:
    if isinstance(s, Pron):
        return "pers" if s.human else "anim"
    return (s.a if isinstance(s, Both) else s).noun.kind


def _objects(verb: Verb) -> frozenset[str]:
    """What a transitive verb takes as its object (empty for an intransitive one)."""
    return verb.obj or frozenset()


def _verbs(group: list[Verb], subj: Subject) -> list[Verb]:
    return [v for v in group if _kind(subj) in v.subj]


def _rand_np(
    rng: random.Random, tags: Iterable[str], *, obj: bool = False, adj_p: float = 0.45, owner_p: float = 0.06
) -> NP:
    """obj: may be a bare plural (the cat sees birds → des oiseaux)."""
    noun = rng.choice(_nouns(frozenset(tags)))
    plural = noun.countable and rng.random() < 0.3
    r = rng.random()
    det = "the" if r < 0.55 else "a" if r < 0.75 else "this" if r < 0.8 else rng.choice(_POSSESSIVE)
    if det == "a" and ("mass" in noun.tags or (plural and not obj)):
        det = "the"
    pre, post = _adjectives(noun.kind, True), _adjectives(noun.kind, False)
    r, adjs = rng.random(), cast("tuple[Adj, ...]", ())
    if r < adj_p * 0.8:
        adjs = (rng.choice(post if post and (not pre or rng.random() < 0.7) else pre),)
    elif r < adj_p and pre and post:
        adjs = (rng.choice(pre), rng.choice(post))  # the big black dog → le grand chien noir
    owner = None
    if det == "the" and noun.kind in ("anim", "obj", "food") and rng.random() < owner_p:
        owner = _rand_np(rng, ("pers", "anim"), adj_p=0.1, owner_p=0)
    return NP(noun, det, plural, adjs, owner)


def _rand_subject(rng: random.Random, tags: Iterable[str], *, agreeing: bool = False, both_p: float = 0.0) -> Subject:
    """A noun phrase, two of them, or a pronoun. agreeing: the clause agrees in gender (est allée, est
    fatiguée), so only he/she, whose gender English shows."""
    r = rng.random()
    if "pers" in tags and r < 0.15:
        return Pron(1, rng.choice("mf")) if agreeing or r < 0.06 else Pron(rng.choice((0, 2, 3)))
    if r > 1 - both_p:
        a = _rand_np(rng, tags, adj_p=0.15, owner_p=0)
        b = _rand_np(rng, (a.noun.kind,), adj_p=0.15, owner_p=0)
        return a if a.noun is b.noun else Both(a, b)
    return _rand_np(rng, tags)


def _rand_tense(rng: random.Random, subj: Subject, *verbs: Verb, neg: str = "") -> str:
    if rng.random() < 0.5:
        return "pres"
    # "the boys read the book": present or past? Only the present then.
    ambiguous = subj.person != 1 and neg != "not" and any(v.en_past == v.en for v in verbs)
    return "pres" if ambiguous else "past"


def _rand_neg(rng: random.Random, p: float = 0.2) -> str:
    r = rng.random()
    return "not" if r < p else "never" if r < p * 1.25 else ""


def _rand_adv(
    rng: random.Random, subj: Subject, tense: str, kinds: tuple[str, ...] = ("freq", "manner", "time")
) -> Adverb:
    fits = [
        a for a in ADVERBS.values() if a.kind in kinds and a.only in ("", tense, "plural" if subj.plural else tense)
    ]
    return rng.choice(fits)


def _rand_pp(rng: random.Random, preps: tuple[str, ...] = _LOCATIVE) -> tuple[str, NP]:
    prep = rng.choice(preps)
    tags = ("pers", "anim") if prep == "with" else (PREPOSITIONS[prep][2],)
    return prep, _rand_np(rng, tags, adj_p=0.25, owner_p=0.03)
