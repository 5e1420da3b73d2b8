"""A lesson step that asks before it shows: the question card under the lesson's note (the question, choices
A–D and a line that says what happens next), answers from a click on a map's cell or a token chip, and the
reveal on the next press with the numbers of the live trace. Kept answers export as CSV.

What a question asks, its answer from the trace and the words of the reveal are Qt-free, in
attnlab/present/lesson_questions.py; the kept answers and their CSV in attnlab/present/lesson_answers.py.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QObject, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QListView, QPushButton, QVBoxLayout, QWidget

from attnlab.present.facts import site_sides
from attnlab.present.lesson_answers import AnswerBook, answer_row
from attnlab.present.lesson_questions import (
    LETTERS,
    Pick,
    Question,
    QuestionError,
    Solution,
    choice_labels,
    graded,
    question_text,
    reveal_text,
    solve,
)
from attnlab.present.model_info import output_vocabulary

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace
    from attnlab.present.lessons import Lesson
    from attnlab.ui.plots.heatmap import LabeledHeatmap  # pyqtgraph: loaded with the first panel, not before
    from attnlab.ui.window.window_host import WindowHost

ASK_HINT = "Answer with A–D, a click on a token or a cell of the map; → shows the answer."
CHOICES_HINT = "Answer with A–D; → shows the answer."
RIGHT, WRONG = "#1e7b34", "#b3261e"  # the revealed answer's and a wrong pick's borders


def _label(name: str) -> QLabel:
    label = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
    label.setObjectName(name)
    return label


class QuestionCard(QFrame):
    """The question, its choices as buttons A–D, and one status line (what to do, what was picked, the
    reveal)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lessonQuestion")
        self.setStyleSheet("QFrame#lessonQuestion { border-left: 4px solid #c98a00; padding: 2px 8px; }")
        self.question = _label("lessonQuestionText")
        self.question.setStyleSheet("font-size: 15pt; font-weight: bold;")
        self.buttons = [QPushButton() for _ in LETTERS]
        row = QHBoxLayout()
        for letter, button in zip(LETTERS, self.buttons, strict=True):
            button.setObjectName(f"lessonChoice{letter}")
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the clicker's keys stay with the window
            button.setStyleSheet("font-size: 13pt; padding: 4px 12px;")
            row.addWidget(button)
        row.addStretch(1)
        self.status = _label("lessonQuestionStatus")
        self.status.setStyleSheet("font-size: 13pt;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.question)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self.setVisible(False)

    def set_choices(self, labels: list[str]) -> None:
        for button, label in zip(self.buttons, labels + [""] * len(self.buttons), strict=False):
            button.setText(label)
            button.setVisible(bool(label))
            button.setStyleSheet("font-size: 13pt; padding: 4px 12px;")

    def mark(self, index: int, colour: str) -> None:
        if 0 <= index < len(self.buttons):
            self.buttons[index].setStyleSheet(
                f"font-size: 13pt; padding: 4px 12px; border: 3px solid {colour}; font-weight: bold;"
            )


class Quiz(QObject):
    """The open question of a playing lesson: asked when its step is shown, answered by a pick, revealed by
    `reveal()` (the player calls it on the next press before moving on)."""

    def __init__(self, window: WindowHost, card: QuestionCard) -> None:
        super().__init__(window)
        self.window, self.card = window, card
        self.answers = AnswerBook()
        self.question: Question | None = None
        self.lesson_title, self.number = "", 0
        self.pick: Pick | None = None
        self.solution: Solution | None = None
        self.revealed = False
        self._reveal_on_trace = False  # pressed while the step's run was still under way
        self._hooked: set[int] = set()
        for i, button in enumerate(card.buttons):
            button.clicked.connect(partial(self._chose, i))
        window.session.traceReady.connect(self._on_trace)
        window.session.stageChanged.connect(lambda _k: self._hook_panels())

    @property
    def waiting(self) -> bool:
        """A question is asked and not yet revealed."""
        return self.question is not None and not self.revealed

    def ask(self, lesson: Lesson, index: int) -> None:
        step = lesson.steps[index]
        self.question, self.pick, self.solution, self.revealed = step.question, None, None, False
        self._reveal_on_trace = False
        self.lesson_title, self.number = lesson.title, index + 1
        if step.question is None:
            self.card.hide()
            return
        self.card.question.setText(question_text(step.question))
        self._solve()
        self.card.show()
        self._hook_panels()

    def stop(self) -> None:
        self.question = None
        self.card.hide()

    def _solve(self) -> None:
        """Work the answer out from the window's trace (again when a newer trace arrives before the reveal)."""
        trace, q = self.window.session.trace, self.question
        if q is None or trace is None:
            return
        try:
            self.solution = solve(q, trace, self._vocab())
        except QuestionError as e:
            self.solution = None
            self.card.set_choices([])
            self.card.status.setText(f"This question cannot be asked on this run: {e}")
            return
        self.card.set_choices(choice_labels(self.solution))
        self._say_pick()

    def _vocab(self) -> Callable[[int], str] | None:
        return output_vocabulary(self.window.session.model)

    def _on_trace(self, _trace: Trace) -> None:
        if self._reveal_on_trace and not self.window.session.busy:
            self._reveal_on_trace = False
            self._show_answer()
        elif self.waiting:
            self._solve()
        self._hook_panels()

    def _say_pick(self) -> None:
        if self.solution is None or self.revealed:
            return
        hint = ASK_HINT if self.solution.side else CHOICES_HINT
        if self.pick is not None:
            hint = f"You picked “{self.pick.text}”. → shows the answer (or pick again)."
        self.card.status.setText(hint)

    # ---- picks ---------------------------------------------------------------------------------------------
    def answer(self, pick: Pick) -> None:
        """Take `pick` as the answer (until the reveal; a later pick replaces it)."""
        if not self.waiting:
            return
        self.pick = pick
        self._say_pick()

    def _chose(self, index: int) -> None:
        if self.solution is not None and index < len(self.solution.choices):
            self.answer(Pick(self.solution.choices[index]))

    def choose(self, letter: str) -> bool:
        """The A–D key: that choice as the answer while a question waits; False when nothing took it."""
        index = LETTERS.find(letter.upper())
        if not self.waiting or self.solution is None or not 0 <= index < len(self.solution.choices):
            return False
        self._chose(index)
        return True

    def _clicked_token(self, side: str, position: int) -> None:
        """A cell (its key column) or a chip of `side` was clicked: an answer when the question asks for a
        token of that side."""
        s = self.solution
        if not self.waiting or s is None or side != s.side or not 0 <= position < len(s.tokens):
            return
        self.answer(Pick(s.tokens[position], position))

    def _cell(self, heatmap: LabeledHeatmap, _row: int, col: int) -> None:
        stage = self.window.session.stage
        if stage is None or stage.kind == "mask" or not stage.site or not heatmap.isVisible():
            return  # a mask's cells toggle the mask
        self._clicked_token(site_sides(stage.site)[1], col)

    def _chip(self, index: QModelIndex) -> None:
        stage = self.window.session.stage
        if stage is not None and index.isValid():
            self._clicked_token(stage.key.split(".", 1)[0], index.row())

    def _hook_panels(self) -> None:
        """Listen to the cells and chips of every panel made so far (panels are made on first use)."""
        from attnlab.ui.plots.heatmap import LabeledHeatmap

        stack = getattr(self.window, "panel_stack", None)
        if stack is None:
            return
        for heatmap in stack.findChildren(LabeledHeatmap):
            if id(heatmap) not in self._hooked:
                self._hooked.add(id(heatmap))
                heatmap.cellClicked.connect(partial(self._cell, heatmap))
        for chips in stack.findChildren(QListView, "tokenChips"):
            if id(chips) not in self._hooked:
                self._hooked.add(id(chips))
                chips.clicked.connect(self._chip)

    # ---- the reveal ----------------------------------------------------------------------------------------
    def reveal(self) -> bool:
        """Show the answer with the trace's numbers and the stage that shows it; False when nothing was
        waiting to be revealed (the press then moves on)."""
        if not self.waiting or self.question is None:
            return False
        self.revealed = True
        if self.window.session.busy:  # the step's own run is not in yet: answer from it when it is
            self._reveal_on_trace = True
            self.card.status.setText("Running the model…")
        else:
            self._show_answer()
        return True

    def _show_answer(self) -> None:
        self._solve()
        s, q = self.solution, self.question
        if s is None or q is None:
            return  # the card already says why it cannot be answered
        self.answers.record(answer_row(self.lesson_title, self.number, q, s, self.pick))
        self.card.status.setText(reveal_text(q, s, self.pick))
        self.card.mark(s.choices.index(s.answer) if s.answer in s.choices else -1, RIGHT)
        if self.pick is not None and not graded(s, self.pick) and self.pick.text in s.choices:
            self.card.mark(s.choices.index(self.pick.text), WRONG)
        session = self.window.session
        if s.head is not None:
            session.set_view(head=s.head)
        if s.position is not None:
            session.set_view(position=s.position)
        session.set_stage(s.reveal_stage)
