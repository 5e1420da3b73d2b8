"""Lesson questions: a step may ask before it shows. Qt-free: reading a question from a lesson step, working
out its answer from the live trace, grading a pick and the words of the reveal.

The correct answer is never written in the lesson: it is computed from the trace when the step runs, so it is
true for whatever model, sentence and toggles the step has. Three kinds:

    question = { kind = "argmax_key", site = "dec.2.cross", head = 3, query = "chien" }
        which key token the head puts the most weight on for that query token (argmax of its row);
    question = { kind = "top_token", after = "chien" }
        which token the model gives the highest probability next (argmax of the output row; `after` names
        the position, default the last one);
    question = { kind = "choice", of = "next", choices = ["mord", "chien", "le", "homme"], after = "chien" }
        which of the given choices scores highest (`of = "next"`: next-token probability; `of = "weight"`:
        the attention weight of site/head/query on each choice key).

Optional in every kind: `text` (the question as said to the class; a default is made from the kind) and, for
the first two, `choices` (2–4 tokens offered as A–D; computed from the trace when absent: the four highest,
in an order that gives nothing away).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnlab.engine import names
from attnlab.limits import excerpt
from attnlab.present import words
from attnlab.present.facts import array, site_sides

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace  # annotations only: the first paint never waits for torch

KINDS = ("argmax_key", "top_token", "choice")
MEASURES = ("next", "weight")  # what a "choice" question compares
KEYS = {"kind", "text", "site", "head", "query", "occurrence", "after", "choices", "of"}
LETTERS = "ABCD"
OUTPUT_STAGES = "out"  # the output stages' keys: out.logits, out.probs (present/stages.py OUTPUT)
MAX_TEXT = 500


class QuestionError(ValueError):
    """A question a lesson cannot ask; the message says why (lessons.py names the step)."""


@dataclass(frozen=True)
class Question:
    kind: str  # one of KINDS
    text: str = ""  # as said to the class ("" = made from the kind: `question_text`)
    site: str = ""  # an attention site, e.g. "dec.2.cross" (argmax_key, choice of = "weight")
    head: int = 1  # counted from 1
    query: str = ""  # the query token (argmax_key, choice of = "weight")
    occurrence: int = 1  # which occurrence of `query` / `after`, counted from 1
    after: str = ""  # the position whose next token is asked ("" = the last one)
    choices: tuple[str, ...] = ()  # given choices (A–D); () = computed from the trace
    of: str = ""  # a choice question's measure: "next" or "weight"

    @property
    def measure(self) -> str:
        """'weight' (attention) or 'next' (next-token probability)."""
        if self.kind == "choice":
            return self.of
        return "weight" if self.kind == "argmax_key" else "next"

    def table(self) -> dict[str, Any]:
        """The question as the TOML inline table lessons.py writes (only what differs from the defaults)."""
        found: dict[str, Any] = {"kind": self.kind}
        for key, default in (("site", ""), ("head", 1), ("query", ""), ("occurrence", 1), ("after", "")):
            if getattr(self, key) != default:
                found[key] = getattr(self, key)
        if self.of:
            found["of"] = self.of
        if self.choices:
            found["choices"] = list(self.choices)
        if self.text:
            found["text"] = self.text
        return found


@dataclass(frozen=True)
class Pick:
    """An answer: a token's text, and the position clicked when it came from a cell or a chip."""

    text: str
    position: int | None = None


@dataclass(frozen=True)
class Solution:
    """A question answered from one trace: the correct token, its value and what each candidate scores."""

    answer: str
    value: float
    choices: tuple[str, ...]  # offered as A–D
    values: Mapping[str, float]  # the value of each candidate token (its largest over occurrences)
    row: tuple[float, ...]  # argmax_key / weight: the head's weights over the key positions
    tokens: tuple[str, ...]  # the key tokens (a clicked cell or chip names its position among these)
    side: str  # the token side a cell or chip click must come from ("src" / "tgt"; "" = only A–D)
    reveal_stage: str  # the stage that shows the answer
    head: int | None  # 0-based head to select for the reveal
    position: int | None  # the output row for the reveal (next-token questions)

    def value_of(self, pick: Pick) -> float:
        if pick.position is not None and 0 <= pick.position < len(self.row):
            return self.row[pick.position]
        return self.values.get(pick.text, math.nan)


# ---- reading ------------------------------------------------------------------------------------------------
def _text(table: Mapping[str, Any], key: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise QuestionError(f"question '{key}' must be a string of at most {MAX_TEXT} characters, not {excerpt(value)}")
    return value


def _count(table: Mapping[str, Any], key: str) -> int:
    value = table.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QuestionError(f"question '{key}' counts from 1 and must be a whole number, not {excerpt(value)}")
    return value


def _choices(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not 2 <= len(value) <= len(LETTERS) or not all(isinstance(c, str) for c in value):
        raise QuestionError(f"question 'choices' must be a list of 2 to {len(LETTERS)} strings, not {excerpt(value)}")
    if len(set(value)) != len(value):
        raise QuestionError(f"question 'choices' repeats a choice: {excerpt(value)}")
    return tuple(value)


def parse_question(table: Any) -> Question | None:
    """A Question from a step's `question` table (None when absent); QuestionError says what is wrong."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise QuestionError("'question' must be a table like { kind = \"top_token\" }")
    extra = sorted(set(table) - KEYS)
    if extra:
        raise QuestionError(f"unknown question key {', '.join(map(repr, extra))}; known: {', '.join(sorted(KEYS))}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise QuestionError(f"question 'kind' must be one of {', '.join(KINDS)}, not {excerpt(kind)}")
    question = Question(
        kind=kind,
        text=_text(table, "text"),
        site=_text(table, "site"),
        head=_count(table, "head"),
        query=_text(table, "query"),
        occurrence=_count(table, "occurrence"),
        after=_text(table, "after"),
        choices=_choices(table.get("choices")),
        of=_text(table, "of"),
    )
    _check_kind(question)
    return question


def _check_kind(q: Question) -> None:
    if q.kind == "choice":
        if q.of not in MEASURES:
            raise QuestionError(f'a choice question needs of = "next" or "weight", not {excerpt(q.of)}')
        if not q.choices:
            raise QuestionError("a choice question needs 'choices' (2 to 4 tokens)")
    elif q.of:
        raise QuestionError(f"'of' is for choice questions only (this one is {q.kind})")
    if q.measure == "weight":
        if not names.is_site(q.site):
            shown = excerpt(q.site)
            raise QuestionError(f"question 'site' must name an attention site such as \"dec.2.cross\", not {shown}")
        if not q.query:
            raise QuestionError("this question needs 'query': the query token whose row is asked about")


# ---- answering from a trace ---------------------------------------------------------------------------------
def _position(tokens: Sequence[str], token: str, occurrence: int, what: str) -> int:
    found = [i for i, t in enumerate(tokens) if t == token]
    if len(found) < occurrence:
        among = excerpt(list(tokens))
        raise QuestionError(f"{what} {excerpt(token)} (occurrence {occurrence}) is not among the tokens {among}")
    return found[occurrence - 1]


def _side_tokens(trace: Trace, side: str) -> list[str]:
    return [str(t) for t in trace.get(names.side_entry(side, "tokens")) or []]


def _best(values: Mapping[str, float]) -> str:
    return max(values, key=lambda k: values[k])


def _weight_solution(q: Question, trace: Trace) -> Solution:
    weights_name = names.site_entry(q.site, "weights")
    if weights_name not in trace:
        raise QuestionError(f"this run has no attention site {q.site!r}")
    q_side, k_side = site_sides(q.site)
    weights = array(trace, weights_name)  # [H, Tq, Tk]
    if q.head > weights.shape[0]:
        raise QuestionError(f"head {q.head}: {q.site} has {weights.shape[0]} heads")
    row_at = _position(_side_tokens(trace, q_side), q.query, q.occurrence, "the query token")
    keys = _side_tokens(trace, k_side)
    row = [float(x) for x in weights[q.head - 1, row_at]]  # [Tk]
    values: dict[str, float] = {}
    for token, weight in zip(keys, row, strict=True):
        values[token] = max(weight, values.get(token, -math.inf))
    offered = q.choices or _computed_choices(values, order=keys)
    if q.choices:
        unknown = [c for c in q.choices if c not in values]
        if unknown:
            raise QuestionError(f"choice {unknown[0]!r} is not a key token of {q.site} ({excerpt(keys)})")
    answer = _best({c: values[c] for c in q.choices}) if q.kind == "choice" else keys[int(np.argmax(row))]
    return Solution(
        answer, values[answer], offered, values, tuple(row), tuple(keys), k_side, weights_name, q.head - 1, None
    )


def _computed_choices(values: Mapping[str, float], order: Sequence[str]) -> tuple[str, ...]:
    """The four highest-scoring candidates, listed in `order` (so the list's order tells nothing)."""
    top = set(sorted(values, key=lambda k: -values[k])[: len(LETTERS)])
    seen: list[str] = []
    for token in order:
        if token in top and token not in seen:
            seen.append(token)
    return tuple(seen)


def _next_solution(q: Question, trace: Trace, vocab: Callable[[int], str] | None) -> Solution:
    if names.PROBS not in trace or vocab is None:
        raise QuestionError("this run has no next-token probabilities to ask about")
    side = "tgt" if names.side_entry("tgt", "tokens") in trace else "src"
    tokens = _side_tokens(trace, side)
    real = len(tokens)
    while real > 1 and tokens[real - 1] == "<pad>":
        real -= 1
    at = _position(tokens, q.after, q.occurrence, "the token") if q.after else real - 1
    probs = np.asarray(trace.read(names.PROBS, at), dtype=np.float64)  # [V]: the output row at `at`
    top = int(probs.argmax())
    ids = {vocab(i): i for i in range(probs.shape[0])}
    if q.choices:
        missing = [c for c in q.choices if c not in ids]
        if missing:
            raise QuestionError(f"choice {missing[0]!r} is not a token of the model's vocabulary")
        offered = q.choices
    else:
        offered = tuple(sorted(vocab(int(i)) for i in np.argsort(-probs)[: len(LETTERS)]))
    values = {c: float(probs[ids[c]]) for c in offered}
    values[vocab(top)] = float(probs[top])
    answer = _best({c: values[c] for c in q.choices}) if q.kind == "choice" else vocab(top)
    shown = at if q.after else None  # the output panel shows the last position unless told another
    return Solution(answer, values[answer], offered, values, (), (), "", f"{OUTPUT_STAGES}.probs", None, shown)


def solve(q: Question, trace: Trace, vocab: Callable[[int], str] | None = None) -> Solution:
    """The question answered from `trace` (`vocab` names output ids: next-token questions need it);
    QuestionError when this run cannot answer it (a missing site or token)."""
    if q.measure == "weight":
        return _weight_solution(q, trace)
    return _next_solution(q, trace, vocab)


# ---- words --------------------------------------------------------------------------------------------------
def question_text(q: Question) -> str:
    """The question as said to the class."""
    if q.text:
        return q.text
    if q.measure == "weight":
        side = words.word(f"{site_sides(q.site)[1]}.side")
        where = f"{words.site_full_words(q.site)}, {words.head_words(q.head - 1)}"
        lead = "Which of these" if q.kind == "choice" else f"Which {side}"
        return f"{lead} token will {where} look at most for “{q.query}”?"
    after = f" after “{q.after}”" if q.after else ""
    lead = "Which of these words" if q.kind == "choice" else "Which token"
    return f"{lead} will the model give the highest probability next{after}?"


def _what(q: Question) -> str:
    return (
        f"the head put {{value}} on “{{answer}}” for “{q.query}”"
        if q.measure == "weight"
        else ("the model gives “{answer}” {value} as the next token")
    )


def reveal_text(q: Question, s: Solution, pick: Pick | None) -> str:
    """'the head put 0.71 on “cat” for “chat”; you picked “the” (0.08): not it.'"""
    said = _what(q).format(value=f"{s.value:.2f}", answer=s.answer)
    said = said[0].upper() + said[1:]
    if pick is None:
        return f"{said}. No answer was given."
    verdict = "right!" if graded(s, pick) else "not it."
    return f"{said}; you picked “{pick.text}” ({s.value_of(pick):.2f}): {verdict}"


def graded(s: Solution, pick: Pick) -> bool:
    """Whether `pick` is the answer (the same token; any occurrence of it)."""
    return pick.text == s.answer


def choice_labels(s: Solution) -> list[str]:
    """'A  mord', 'B  chien', … the buttons' texts."""
    return [f"{LETTERS[i]}  {c}" for i, c in enumerate(s.choices)]


SHOWING_STEPS = ("scores", "scaled", "capped", "biased", "masked", "weights", "heads", "lines", "context")


def gives_away(stage_key: str, q: Question) -> bool:
    """Whether the stage shown while asking already shows the answer (a lesson must not ask there)."""
    if q.measure == "weight":
        site, _, step = stage_key.rpartition(".")
        return site == q.site and step in SHOWING_STEPS
    return stage_key.startswith(f"{OUTPUT_STAGES}.")
