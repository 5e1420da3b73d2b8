"""The phrase builders of the English→French corpus: each one builds the same piece of sentence in both
languages at once, from the same choices.

A builder returns two token lists, English and French; a token is a word and a link id (or None for
function words). A content word and its translation share a link, which is how `finish` turns a pair of
token lists into an alignment. Which words are put together is decided elsewhere (`corpus.py` samples them);
here is only how they are said: agreement, word order, elision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from attnlab.training.lexicon import (
    ADVERBS,
    BE_PAST,
    BE_PRESENT,
    DETERMINERS,
    HAVE_PRESENT,
    PREPOSITIONS,
    STATES,
    Adj,
    Adverb,
    Noun,
    Verb,
    vowel_sound,
)

Tokens = list[tuple[str, "int | None"]]  # words with the link id they share with their translation


class Links:
    """Hands out link ids within one sentence."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


@dataclass(frozen=True)
class NP:
    noun: Noun
    det: str = "the"  # a key of DETERMINERS
    plural: bool = False
    adjs: tuple[Adj, ...] = ()  # English order; the pre-nominal French ones first
    owner: NP | None = None  # the girl's cat: the cat is the head, the girl the owner
    of: bool = False  # with an owner, English says "the cat of the girl" instead of "the girl's cat"
    rel: tuple | None = None  # ("qui", verb, object NP or None) or ("que", subject, verb); tense in .tense
    tense: str = "pres"  # of the relative clause

    @property
    def person(self) -> int:
        return 4 if self.plural else 1

    @property
    def gender(self) -> str:
        return self.noun.gender

    @property
    def human(self) -> bool:
        return self.noun.kind == "pers"


@dataclass(frozen=True)
class Both:
    """Two coordinated subjects: the cat and the mouse (plural; masculine unless both are feminine)."""

    a: NP
    b: NP
    person = 4
    plural = True

    @property
    def gender(self) -> str:
        return "f" if self.a.gender == self.b.gender == "f" else "m"

    @property
    def human(self) -> bool:
        return self.a.human and self.b.human


@dataclass(frozen=True)
class Pron:
    person: int  # 0..4: i, he/she/it, we, you, they
    gender: str = "m"
    human: bool = True

    @property
    def plural(self) -> bool:
        return self.person >= 2


Subject = NP | Both | Pron  # who does something
Sentence = tuple[Tokens, Tokens]  # English and French tokens of one sentence (or clause)


def noun_phrase(new: Links, np: NP, negated: bool = False) -> tuple[Tokens, Tokens]:
    """A noun phrase. `negated`: the direct object of a negated verb, where un/une/des become de."""
    pl, g = np.plural, np.gender
    link = new()
    adjs = [(a, new()) for a in np.adjs]
    pre: Tokens = [(a.form(g, pl), k) for a, k in adjs if a.pre]
    post: Tokens = [(a.form(g, pl), k) for a, k in adjs if not a.pre]
    words: Tokens = pre + [(np.noun.fr_pl if pl else np.noun.fr, link)] + post
    if pre and not pl and g == "m" and np.adjs[0].before_vowel and vowel_sound(words[1][0]):
        words[0] = (np.adjs[0].before_vowel, words[0][1])  # le bel oiseau, le vieil homme
    (en_sg, en_pl), fr_forms = DETERMINERS["the" if np.owner else np.det]
    det = fr_forms[2 if pl else int(g == "f")]
    if np.det == "a" and not np.owner and (negated or (pl and pre)):
        det = "de"  # pas de chat; de grands chats
    elif vowel_sound(words[0][0]):
        det = {"ma": "mon", "sa": "son", "ce": "cet"}.get(det, det)  # mon école, cet arbre
    fr: Tokens = [(det, None), *words]
    en: Tokens = [(a.en, k) for a, k in adjs]
    en.append((np.noun.en_pl if pl else np.noun.en, link))
    if np.owner:
        owner_en, owner_fr = noun_phrase(new, np.owner)
        if np.of:  # the mother of the boy → la mère du garçon
            en = [("the", None), *en, ("of", None), *owner_en]
        else:
            word, k = owner_en[-1]
            owner_en[-1] = (word + "'" if np.owner.plural and word.endswith("s") else word + "'s", k)
            en = owner_en + en
        fr += [("de", None), *owner_fr]
    elif en_pl if pl else en_sg:
        en.insert(0, (en_pl if pl else en_sg, None))
    if np.rel:
        if np.rel[0] == "qui":
            rel_en, rel_fr = verb_phrase(new, np.rel[1], np, tense=np.tense, obj=np.rel[2])
        else:
            s_en, s_fr = subject(new, np.rel[1])
            v_en, v_fr = verb_phrase(new, np.rel[2], np.rel[1], tense=np.tense, gap=np)
            rel_en, rel_fr = s_en + v_en, s_fr + v_fr
        en += [("that", None), *rel_en]
        fr += [(np.rel[0], None), *rel_fr]
    return en, fr


def subject(new: Links, s: Subject) -> tuple[Tokens, Tokens]:
    if isinstance(s, Pron):
        k = new()
        masc = s.gender == "m"
        en = ("i", "he" if masc else "she", "we", "you", "they")[s.person]
        fr = ("je", "il" if masc else "elle", "nous", "vous", "ils" if masc else "elles")[s.person]
        return [("it" if s.person == 1 and not s.human else en, k)], [(fr, k)]
    if isinstance(s, Both):
        (a_en, a_fr), (b_en, b_fr) = noun_phrase(new, s.a), noun_phrase(new, s.b)
        return a_en + [("and", None)] + b_en, a_fr + [("et", None)] + b_fr
    return noun_phrase(new, s)


def prep_phrases(new: Links, pps: Iterable[tuple[str, NP]]) -> tuple[Tokens, Tokens]:
    """Prepositional phrases (on the mat → sur le tapis), in the same order in both languages."""
    en: Tokens = []
    fr: Tokens = []
    for prep, np in pps:
        en_words, fr_words, _ = PREPOSITIONS[prep]
        np_en, np_fr = noun_phrase(new, np)
        en += [(w, None) for w in en_words] + np_en
        fr += [(w, None) for w in fr_words] + np_fr
    return en, fr


def verb_phrase(
    new: Links,
    verb: Verb,
    subj: Subject,
    *,
    tense: str = "pres",
    neg: str = "",
    obj: NP | Pron | None = None,
    pps: Iterable[tuple[str, NP]] = (),
    adv: Adverb | None = None,
    gap: NP | None = None,
    ask: bool = False,
) -> tuple[Tokens, Tokens]:
    """A verb phrase agreeing with `subj`. neg: "", "not" or "never". obj: NP, Pron (placed before the French
    verb) or None. gap: the antecedent of a relative "que", which the participle agrees with. ask: the English
    of a yes/no question (does … see; `question` puts the auxiliary before the subject); no negation then."""
    p, past = subj.person, tense == "past"
    link, adv_link = new(), new() if adv else None
    never = new() if neg == "never" else None
    en: Tokens = []
    if ask:
        en += [("did" if past else "does" if p == 1 else "do", None), (verb.en, link)]
    elif neg == "not":
        en += [("did" if past else "does" if p == 1 else "do", None), ("not", None), (verb.en, link)]
    else:
        if never:
            en.append(("never", never))
        elif adv and adv.kind == "freq":
            en.append((adv.en, adv_link))
        en.append((verb.en_past if past else verb.en_3sg if p == 1 else verb.en, link))
    if verb.particle:
        en.append((verb.particle, None))
    fr: Tokens = [("ne", None)] if neg else []
    obj_en: Tokens = []
    obj_fr: Tokens = []
    if isinstance(obj, Pron):
        k = new()
        him = ("him" if obj.gender == "m" else "her") if obj.human else "it"
        obj_en = [("them" if obj.plural else him, k)]
        fr.append(("les" if obj.plural else "le" if obj.gender == "m" else "la", k))
    elif obj is not None:
        obj_en, obj_fr = noun_phrase(new, obj, negated=bool(neg) and not verb.fr_prep)
        obj_fr = ([(verb.fr_prep, None)] if verb.fr_prep else []) + obj_fr
    neg_word = [("pas", None)] if neg == "not" else [("jamais", never)] if never else []
    middle = [(adv.fr, adv_link)] if adv and adv.kind in ("freq", "manner") else []
    if past:
        fr += [(BE_PRESENT[1][p] if verb.etre else HAVE_PRESENT[p], None), *neg_word]
        agree = subj if verb.etre else obj if isinstance(obj, Pron) else gap
        participle = verb.participle(agree.gender, agree.plural) if agree else verb.pp
        if adv and adv.short:
            fr += [*middle, (participle, link)]
        else:
            fr += [(participle, link), *middle]
    else:
        fr += [(verb.present[p], link), *neg_word, *middle]
    pp_en, pp_fr = prep_phrases(new, pps)
    en += obj_en + pp_en
    fr += obj_fr + pp_fr
    if adv and adv.kind == "manner":
        en.append((adv.en, adv_link))
    if adv and adv.kind == "time":
        en.append((adv.en, adv_link))
        fr.append((adv.fr, adv_link))
    return en, fr


def copula(
    new: Links,
    subj: Subject,
    *,
    tense: str = "pres",
    neg: bool = False,
    adj: Adj | None = None,
    degree: Adverb | None = None,
    pps: Iterable[tuple[str, NP]] = (),
    sit: bool = False,
    ask: bool = False,
) -> tuple[Tokens, Tokens]:
    """subj is/was [not] [very] ADJ | subj is [not] on the mat | subj sits on the mat (est assis).
    ask: the English of a yes/no question (is the cat black, does the cat sit …); the French is the statement,
    for `asked` to put est-ce que before."""
    p, link = subj.person, new()
    s_en, s_fr = subject(new, subj)
    table = BE_PAST if tense == "past" else BE_PRESENT
    if sit and ask:
        en = [("does" if p == 1 else "do", None), ("sit", link)]
    elif sit:
        en = (
            [("does" if p == 1 else "do", None), ("not", None), ("sit", link)]
            if neg
            else [("sits" if p == 1 else "sit", link)]
        )
    else:
        en = [(table[0][p], link)] + ([("not", None)] if neg else [])
    fr: Tokens = [("ne", None)] if neg else []
    fr += [(table[1][p], link)] + ([("pas", None)] if neg else [])
    if sit:
        fr.append((("assis", "assise", "assis", "assises")[(subj.gender == "f") + 2 * subj.plural], link))
    if degree:
        k = new()
        en.append((degree.en, k))
        fr.append((degree.fr, k))
    if adj:
        k = new()
        en.append((adj.en, k))
        fr.append((adj.form(subj.gender, subj.plural), k))
    t_en, t_fr = prep_phrases(new, pps)
    if ask:  # the verb (or does) before the subject
        return en[:1] + s_en + en[1:] + t_en, s_fr + fr + t_fr
    return s_en + en + t_en, s_fr + fr + t_fr


def clause(new: Links, subj: Subject, verb: Verb, **kw: Any) -> tuple[Tokens, Tokens]:
    s_en, s_fr = subject(new, subj)
    v_en, v_fr = verb_phrase(new, verb, subj, **kw)
    return s_en + v_en, s_fr + v_fr


def question(new: Links, subj: Subject, verb: Verb, **kw: Any) -> tuple[Tokens, Tokens]:
    """does the cat like milk → le chat aime le lait (for `asked`)."""
    s_en, s_fr = subject(new, subj)
    v_en, v_fr = verb_phrase(new, verb, subj, ask=True, **kw)
    return v_en[:1] + s_en + v_en[1:], s_fr + v_fr


def asked(sentence: tuple[Tokens, Tokens]) -> tuple[Tokens, Tokens]:
    """A yes/no question in French: est-ce que before the statement (est-ce que le chat est noir ?). The
    English side is already a question (built with ask=True); `finish` adds the "?"."""
    en, fr = sentence
    return en, [("est-ce", None), ("que", None), *fr]


def and_it(
    new: Links, subj: Subject, first: Verb, obj: NP, second: Verb, *, tense: str = "pres", neg: str = ""
) -> tuple[Tokens, Tokens]:
    """the girl finds the key and takes it → la fille trouve la clé et la prend."""
    a_en, a_fr = clause(new, subj, first, tense=tense, obj=obj)
    it = Pron(obj.person, obj.gender, obj.human)
    b_en, b_fr = verb_phrase(new, second, subj, tense=tense, neg=neg, obj=it)
    return a_en + [("and", None)] + b_en, a_fr + [("et", None)] + b_fr


def because_it(new: Links, subj: NP, verb: Verb, obj: NP, adj: Adj, degree: str = "too") -> tuple[Tokens, Tokens]:
    """the animal did not cross the street because it was too tired / too wide: "it" is the subject when
    the adjective is a state (STATES), else the object, and French shows which by il/elle."""
    a_en, a_fr = clause(new, subj, verb, tense="past", neg="not", obj=obj)
    ref = subj if adj.en in STATES else obj
    it = Pron(ref.person, ref.gender, ref.human)
    b_en, b_fr = copula(new, it, tense="past", adj=adj, degree=ADVERBS[degree])
    return a_en + [("because", None)] + b_en, a_fr + [("parce", None), ("que", None)] + b_fr


def there_is(
    new: Links, np: NP, pps: Iterable[tuple[str, NP]], tense: str = "pres", ask: bool = False
) -> tuple[Tokens, Tokens]:
    n_en, n_fr = noun_phrase(new, np)
    t_en, t_fr = prep_phrases(new, pps)
    be = ("were" if np.plural else "was") if tense == "past" else ("are" if np.plural else "is")
    there = [(be, None), ("there", None)] if ask else [("there", None), (be, None)]
    return (there + n_en + t_en, [("il", None), ("y", None), ("avait" if tense == "past" else "a", None)] + n_fr + t_fr)


def finish(en: Tokens, fr: Tokens, end: str = ".") -> tuple[str, str, tuple[tuple[int, int], ...]]:
    """Elision and contraction on the French side, a/an on the English side, the final "." (or `end`: "?"
    for a question), the alignment."""
    merged: Tokens = []
    for word, k in fr:  # le arbre → l'arbre, que il → qu'il, ne a → n'a (the link of the content part)
        if merged and merged[-1][0] in ("le", "la", "je", "ne", "de", "que") and vowel_sound(word):
            prev, prev_k = merged.pop()
            word, k = prev[:-1] + "'" + word, k if k is not None else prev_k
        merged.append((word, k))
    fr = []
    for word, k in merged:  # de le → du, à les → aux
        if fr and fr[-1][0] in ("de", "à") and word in ("le", "les"):
            word = {"de": {"le": "du", "les": "des"}, "à": {"le": "au", "les": "aux"}}[fr.pop()[0]][word]
        fr.append((word, k))
    en = [("an" if w == "a" and en[i + 1][0][0] in "aeiou" else w, k) for i, (w, k) in enumerate(en)]
    en.append((end, None))
    fr.append((end, None))
    source = {k: i for i, (_, k) in enumerate(en) if k is not None}
    alignment = tuple((i, source[k]) for i, (_, k) in enumerate(fr) if k is not None)
    return " ".join(w for w, _ in en), " ".join(w for w, _ in fr), alignment
