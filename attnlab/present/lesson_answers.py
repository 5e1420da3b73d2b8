"""The answers a class gave to a lesson's questions, kept per session (one row per lesson step, the latest
answer), and their CSV: lesson, step, question, answer given, correct answer, correct?, value, correct value.
Qt-free."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from attnlab.present.lesson_questions import Pick, Question, Solution, graded, question_text

COLUMNS = ("lesson", "step", "question", "answer given", "correct answer", "correct?", "value", "correct value")


@dataclass(frozen=True)
class AnswerRow:
    lesson: str
    step: int  # counted from 1
    question: str
    given: str  # "" when the step was revealed without an answer
    correct_answer: str
    correct: bool
    value: float  # what the given answer scores (a weight or a probability; nan without one)
    correct_value: float

    def cells(self) -> list[str]:
        def number(x: float) -> str:
            return "" if math.isnan(x) else f"{x:.6g}"

        yes = ("yes" if self.correct else "no") if self.given else ""
        return [
            self.lesson,
            str(self.step),
            self.question,
            self.given,
            self.correct_answer,
            yes,
            number(self.value),
            number(self.correct_value),
        ]


def answer_row(lesson: str, step: int, q: Question, s: Solution, pick: Pick | None) -> AnswerRow:
    return AnswerRow(
        lesson=lesson,
        step=step,
        question=question_text(q),
        given=pick.text if pick is not None else "",
        correct_answer=s.answer,
        correct=pick is not None and graded(s, pick),
        value=s.value_of(pick) if pick is not None else math.nan,
        correct_value=s.value,
    )


class AnswerBook:
    """Answers kept for the session: the latest per (lesson, step), in the order first answered."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, int], AnswerRow] = {}

    def record(self, row: AnswerRow) -> None:
        self._rows[(row.lesson, row.step)] = row

    @property
    def rows(self) -> list[AnswerRow]:
        return list(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in self._rows.values():
            writer.writerow(row.cells())
        return out.getvalue()
