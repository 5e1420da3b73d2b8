"""Everyday sentences, added in corpus version 2: what a teacher types in the first minute.

Version 1 of the corpus almost never had a pronoun as subject ("we are tired" never occurred), and had no
"the X of the Y", no questions, no numbers and no "have". These templates add them, in the corpus's own
conventions (they are also the conventions of the hand-written evaluation set, resources/training/):

- pronoun subjects i, you, he, she, it, we, they → je, vous, il, elle, il, nous, ils. English does not show
  gender (nor, for "you", number), so the French takes one fixed default: masculine, and "you" is the plural
  "vous" (you are tired → vous êtes fatigués; they are tired → ils sont fatigués). "it" alone stands for an
  animal (it is black → il est noir). Where an earlier noun says otherwise (the girls did not cross the
  river because they were tired → … elles étaient …) the version-1 templates agree with that noun.
- "the X of the Y" → le X du / de la / de l' / des Y (the mother of the boy → la mère du garçon).
- yes/no questions → est-ce que + the statement, and "?" on both sides (is the cat black ? → est-ce que le
  chat est noir ?; does she like milk ? → est-ce qu'elle aime le lait ?). Inversion is not used.
- numbers one to ten as determiners, the noun plural from two on (three dogs sleep → trois chiens dorment).
- object pronouns him / her / them → le / la / les before the verb, elided before a vowel (she loves him →
  elle l'adore), which version 1 avoided.
- have (avoir: i have a cat → j'ai un chat) and make (faire), in the present.

Every template returns (English tokens, French tokens), a question also "?", or None when its random
choices do not fit together, like the templates in corpus.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from attnlab.training.grammar import (
    NP,
    Links,
    Pron,
    Sentence,
    Subject,
    Tokens,
    asked,
    clause,
    copula,
    question,
    there_is,
)
from attnlab.training.lexicon import ADVERBS, EVERYDAY_VERBS, NOUNS, NUMBERS, Adj, Adverb, Verb
from attnlab.training.sampling import (
    _INTRANSITIVE,
    _KINDS,
    _LOCATIVE,
    _MOTION,
    _TRANSITIVE,
    _adjectives,
    _kind,
    _nouns,
    _objects,
    _rand_np,
    _rand_pp,
    _rand_tense,
    _verbs,
)

# i, he, she, it, we, you, they: masculine unless English says otherwise; "it" is an animal
PRONOUNS = (Pron(0), Pron(1, "m"), Pron(1, "f"), Pron(1, "m", human=False), Pron(2), Pron(3), Pron(4))
OBJECT_PRONOUNS = (Pron(1, "m"), Pron(1, "f"), Pron(4))  # him, her, them
FAMILY = ("mother", "father", "brother", "sister", "uncle", "aunt", "grandmother", "grandfather")
_HAVE, _MAKE = EVERYDAY_VERBS["have"], EVERYDAY_VERBS["make"]
_ACTIONS = [*_TRANSITIVE, _HAVE, _HAVE, _HAVE, _MAKE]  # "have" is what people type most
_DEGREES = ("very", "too", "really", "quite", "so")
_PLACED = ("anim", "pers", "obj", "food", "furn", "veh")  # what can be on / under / in something
Built = Sentence | tuple[Tokens, Tokens, str]  # a template's sentence, with its end ("?") when not "."


def _pronoun(rng: random.Random) -> Pron:
    return rng.choice(PRONOUNS)


def _present_or_past(rng: random.Random, subj: Subject, verb: Verb, neg: str = "") -> str:
    """Mostly the present; "have" and "make" only in it (i had → j'avais is another tense)."""
    if verb in (_HAVE, _MAKE) or rng.random() < 0.6:
        return "pres"
    return _rand_tense(rng, subj, verb, neg=neg)


def _number_np(rng: random.Random, tags: Iterable[str], adj_p: float = 0.2) -> NP | None:
    """three black cats → trois chats noirs; one cat → un chat."""
    nouns = [n for n in _nouns(frozenset(tags)) if n.countable]
    if not nouns:
        return None
    noun, number = rng.choice(nouns), rng.choice(NUMBERS)
    adjs = _adjectives(noun.kind, False) + _adjectives(noun.kind, True)
    chosen: tuple[Adj, ...] = (rng.choice(adjs),) if adjs and rng.random() < adj_p else ()
    return NP(noun, number, number != "one", chosen)


def _of_np(rng: random.Random, tags: Iterable[str]) -> NP:
    """the mother of the boy → la mère du garçon; the ball of the girls → le ballon des filles."""
    family = [NOUNS[n] for n in FAMILY] if "pers" in tags else []
    head = rng.choice(family) if family and rng.random() < 0.6 else rng.choice(_nouns(frozenset(tags)))
    owner = _rand_np(rng, ("pers", "anim"), adj_p=0.15, owner_p=0)
    adjs = _adjectives(head.kind, False)
    chosen: tuple[Adj, ...] = (rng.choice(adjs),) if adjs and rng.random() < 0.1 else ()
    return NP(head, "the", head.countable and rng.random() < 0.15, chosen, owner=owner, of=True)


def _object(rng: random.Random, verb: Verb, pronoun_p: float = 0.3) -> NP | Pron:
    """The object of a transitive verb: him / her / them, a number of things, or a noun phrase."""
    if _objects(verb) & {"pers", "anim"} and rng.random() < pronoun_p:
        return rng.choice(OBJECT_PRONOUNS)
    if rng.random() < 0.15:
        np = _number_np(rng, _objects(verb))
        if np is not None:
            return np
    return _rand_np(rng, _objects(verb), obj=True, adj_p=0.3)


def _predicate(rng: random.Random, subj: Subject) -> tuple[Adj, Adverb | None]:
    """An adjective that fits the subject, and now and then very / too / … before it."""
    kind = _kind(subj)
    adj = rng.choice(_adjectives(kind, False) + _adjectives(kind, True))
    degree = ADVERBS[rng.choice(_DEGREES)] if rng.random() < 0.25 else None
    return adj, degree


def _t_pronoun_be(rng: random.Random, new: Links) -> Built | None:
    """i am tired → je suis fatigué; we are in the garden → nous sommes dans le jardin."""
    subj = _pronoun(rng)
    tense = "pres" if rng.random() < 0.75 else "past"
    neg = rng.random() < 0.2
    r = rng.random()
    if r < 0.75:
        adj, degree = _predicate(rng, subj)
        return copula(new, subj, tense=tense, neg=neg, adj=adj, degree=degree)
    if r < 0.9:
        return copula(new, subj, tense=tense, neg=neg, pps=[_rand_pp(rng)])
    return copula(new, subj, sit=True, neg=neg, pps=[_rand_pp(rng, ("on", "under", "near", "next to"))])


def _t_pronoun_verb(rng: random.Random, new: Links) -> Built | None:
    """i have a cat → j'ai un chat; she loves him → elle l'adore; we go to school → nous allons à l'école."""
    subj = _pronoun(rng)
    r = rng.random()
    group = _ACTIONS if r < 0.7 else _INTRANSITIVE if r < 0.85 else _MOTION
    verbs = _verbs(group, subj)
    if not verbs:
        return None
    verb = rng.choice(verbs)
    neg = "not" if rng.random() < 0.15 else ""
    tense = _present_or_past(rng, subj, verb, neg)
    if verb.etre:
        obj = _rand_np(rng, verb.obj, adj_p=0.1, owner_p=0) if verb.obj else None
        return clause(new, subj, verb, tense=tense, neg=neg, obj=obj)
    if verb.obj:
        return clause(new, subj, verb, tense=tense, neg=neg, obj=_object(rng, verb))
    pps = [_rand_pp(rng, (*_LOCATIVE, "with"))] if rng.random() < 0.3 else []
    return clause(new, subj, verb, tense=tense, neg=neg, pps=pps)


def _t_of(rng: random.Random, new: Links) -> Built | None:
    """the mother of the boy loves him → la mère du garçon l'adore; i see the dog of the girl → …"""
    if rng.random() < 0.6:  # as the subject
        subj: Subject = _of_np(rng, ("pers", "anim"))
        r = rng.random()
        if r < 0.5:
            verb = rng.choice(_verbs(_ACTIONS, subj))
            tense = _present_or_past(rng, subj, verb)
            return clause(new, subj, verb, tense=tense, obj=_object(rng, verb, pronoun_p=0.5))
        if r < 0.85:
            adj, degree = _predicate(rng, subj)
            return copula(new, subj, tense="pres" if rng.random() < 0.75 else "past", adj=adj, degree=degree)
        verb = rng.choice(_verbs(_INTRANSITIVE, subj))
        return clause(new, subj, verb, tense=_present_or_past(rng, subj, verb))
    subj = _pronoun(rng) if rng.random() < 0.5 else _rand_np(rng, ("pers",), adj_p=0.15, owner_p=0)
    verbs = [v for v in _verbs(_ACTIONS, subj) if _objects(v) & {"pers", "anim", "obj", "food"}]
    verb = rng.choice(verbs)
    obj = _of_np(rng, _objects(verb) & {"pers", "anim", "obj", "food"})
    return clause(new, subj, verb, tense=_present_or_past(rng, subj, verb), obj=obj)


def _t_question(rng: random.Random, new: Links) -> Built | None:
    """is the cat black ? → est-ce que le chat est noir ?; do you see him ? → est-ce que vous le voyez ?"""
    subj = _pronoun(rng) if rng.random() < 0.4 else _rand_np(rng, _KINDS, adj_p=0.2, owner_p=0.03)
    tense = "pres" if rng.random() < 0.75 else "past"
    r = rng.random()
    if r < 0.4:
        adj, degree = _predicate(rng, subj)
        sentence = copula(new, subj, tense=tense, adj=adj, degree=degree, ask=True)
    elif r < 0.5:
        if _kind(subj) not in _PLACED:
            return None
        sentence = copula(new, subj, tense=tense, pps=[_rand_pp(rng)], ask=True)
    elif r < 0.92:
        verbs = _verbs(_ACTIONS + _INTRANSITIVE + _MOTION, subj)
        if not verbs:
            return None
        verb = rng.choice(verbs)
        tense = "pres" if verb in (_HAVE, _MAKE) else tense
        obj: NP | Pron | None
        if verb.obj and not verb.etre:
            obj = _object(rng, verb, pronoun_p=0.25)
        else:
            obj = _rand_np(rng, verb.obj, adj_p=0.1, owner_p=0) if verb.obj else None
        sentence = question(new, subj, verb, tense=tense, obj=obj)
    else:
        np = _rand_np(rng, _PLACED, obj=True, owner_p=0)
        if "mass" in np.noun.tags:
            return None
        sentence = there_is(new, NP(np.noun, "a", np.plural, np.adjs), [_rand_pp(rng)], tense, ask=True)
    return (*asked(sentence), "?")


def _t_numbers(rng: random.Random, new: Links) -> Built | None:
    """i have three cats → j'ai trois chats; two dogs sleep → deux chiens dorment; there are five apples …"""
    r = rng.random()
    if r < 0.4:  # a number of things as the object
        subj = _pronoun(rng) if rng.random() < 0.5 else _rand_np(rng, ("pers", "anim"), adj_p=0.2, owner_p=0)
        verb = rng.choice(_verbs(_ACTIONS, subj))
        obj = _number_np(rng, _objects(verb))
        if obj is None:
            return None
        neg = "not" if rng.random() < 0.1 else ""
        return clause(new, subj, verb, tense=_present_or_past(rng, subj, verb, neg), neg=neg, obj=obj)
    if r < 0.75:  # as the subject
        counted = _number_np(rng, ("pers", "anim"), adj_p=0.25)
        if counted is None:
            return None
        subj = counted
        if rng.random() < 0.5:
            verb = rng.choice(_verbs(_INTRANSITIVE, subj))
            return clause(new, subj, verb, tense=_present_or_past(rng, subj, verb))
        adj, degree = _predicate(rng, subj)
        return copula(new, subj, tense="pres" if rng.random() < 0.75 else "past", adj=adj, degree=degree)
    np = _number_np(rng, _PLACED, adj_p=0.2)
    if np is None:
        return None
    if rng.random() < 0.5:
        return there_is(new, np, [_rand_pp(rng)], "pres" if rng.random() < 0.75 else "past")
    return copula(new, np, tense="pres", pps=[_rand_pp(rng)])


EVERYDAY_TEMPLATES = {_t_pronoun_be: 8, _t_pronoun_verb: 10, _t_of: 5, _t_question: 8, _t_numbers: 5}
