"""Lessons in the window: play one (the clicker walks its steps, applying each step's toggles, sentence and
stage and showing its note above the panel), and write one (File → Save lesson…, "Add current stage to
lesson"). The file format and its checks are Qt-free, in attnlab/present/lessons.py.

window_menus.py only calls `add_lesson_actions(window, menu)`; the window's step keys ask `lesson_step`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QBoxLayout, QFileDialog, QInputDialog, QLabel, QMenu, QMessageBox

from attnlab.present.export import write_text
from attnlab.present.lessons import (
    Lesson,
    LessonError,
    Step,
    bundled_lessons,
    lesson_toml,
    patch_problems,
    read_lesson,
    stage_problems,
    toggles_of,
)
from attnlab.present.patch_request import PatchAsk
from attnlab.present.status_texts import model_name
from attnlab.present.window_facts import PROBS_KIND, lesson_options
from attnlab.session_patching import drop_patch_step, patch_step, unpatched
from attnlab.ui.window.lesson_quiz import QuestionCard, Quiz

if TYPE_CHECKING:
    from attnlab.present.engine_api import LiveModel, Trace
    from attnlab.ui.window.window_host import WindowHost

LESSON_FILTER = "attnlab lessons (*.toml);;All files (*)"


class LessonPlayer(QObject):
    """Walks a Lesson in a window: `go(i)` applies step i; `step(±1)` is what the clicker calls."""

    def __init__(self, window: WindowHost) -> None:
        super().__init__(window)
        self.window = window
        self.lesson: Lesson | None = None
        self.index = 0
        self.note = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.note.setObjectName("lessonNote")
        self.note.setVisible(False)
        self.note.setStyleSheet(
            "QLabel#lessonNote { font-size: 15pt; padding: 6px 10px; border-left: 4px solid #3a7bd5; }"
        )
        central = window.centralWidget()
        layout = central.layout() if central is not None else None
        assert isinstance(layout, QBoxLayout)  # MainWindow._build_central's column
        layout.insertWidget(max(0, layout.count() - 1), self.note)  # above the stage and its explanation
        self._patch: PatchAsk | None = None  # a step's patch, applied once the step's own run (B) is on screen
        self._pinned = False  # whether a step's patch pinned its run A
        # before the quiz's: run B of a patch step starts its run A (busy) before a waiting reveal reads it
        window.session.traceReady.connect(self._patch_when_run)
        self.card = QuestionCard()
        layout.insertWidget(layout.indexOf(self.note) + 1, self.card)  # a step's question, under its note
        self.quiz = Quiz(window, self.card)
        self._checked = False
        window.session.traceReady.connect(self._check_stages)

    @property
    def active(self) -> bool:
        return self.lesson is not None

    def start(self, lesson: Lesson, index: int = 0) -> None:
        self.lesson, self._checked = lesson, False
        presenting = getattr(self.window, "set_presenting", None)
        if presenting is not None:
            presenting(True)
        self.go(index)

    def stop(self) -> None:
        self.lesson, self._patch = None, None
        self.note.hide()
        self.quiz.stop()

    def go(self, index: int) -> None:
        lesson, s = self.lesson, self.window.session
        if lesson is None:
            return
        self.index = index = max(0, min(len(lesson.steps) - 1, index))
        step = lesson.steps[index]
        src, tgt = lesson.text_of(index)
        texts_change = src != s.src or (tgt is not None and tgt != s.tgt)
        s.set_src(src, debounce=False)
        if tgt is not None:
            s.set_tgt(tgt, debounce=False, typed=False)  # the lesson's: it follows a sentence typed later
        if texts_change:
            s.textsChanged.emit()  # the input boxes show the step's sentence
        s.set_options(lesson_options(lesson, index, s.options))
        if step.head is not None:
            s.set_view(head=step.head - 1)
        if step.fixed_axis is not None:  # the output panel's "Fixed 0–1 axis" (issue 32: temperature you can see)
            fixed = getattr(self.window.panel_for(PROBS_KIND), "fixed_axis", None)
            if fixed is not None:
                fixed.setChecked(step.fixed_axis)
        if any(st.key == step.stage for st in s.stages):
            s.set_stage(step.stage)
        else:
            s.stage_key = step.stage  # picked when the next trace (of the new options) arrives
        self._start_patch(step.patch)
        self.note.setText(f"{lesson.title} · step {index + 1} of {len(lesson.steps)}\n{step.note}")
        self.note.show()
        self.quiz.ask(lesson, index)

    def step(self, delta: int) -> None:
        """The clicker: the next press on a step with an open question reveals its answer; the press after
        moves on."""
        if self.lesson is None or (delta > 0 and self.quiz.reveal()):
            return
        self.go(self.index + delta)

    def _start_patch(self, ask: PatchAsk | None) -> None:
        """A step's patch (issue 37): run A from its sentence once run B, the step's run, is on screen; a step
        without one drops the previous step's run A."""
        s = self.window.session
        drop_patch_step(s)
        if self._pinned:
            self._pinned = False
            s.unpin()
        self._patch = ask
        if ask is not None and not s.busy and unpatched(s.trace):
            self._patch_when_run(s.trace)  # the step changed nothing: run B is already on screen

    def _patch_when_run(self, trace: Trace | None) -> None:
        if self._patch is None or not unpatched(trace):
            return
        ask, self._patch, self._pinned = self._patch, None, True
        patch_step(self.window.session, ask)

    def _check_stages(self, _trace: Trace) -> None:
        """Once the lesson's model has run: say which steps name stages it does not have."""
        if self.lesson is None or self._checked:
            return
        self._checked = True
        problems = stage_problems(self.lesson, [st.key for st in self.window.session.stages])
        problems += patch_problems(self.lesson, _trace.config)
        if problems:
            QMessageBox.warning(
                self.window,
                "This lesson does not fit the model",
                "Some steps name stages or patches this model does not have:\n" + "\n".join(problems[:12]),
            )


def player_of(window: WindowHost) -> LessonPlayer:
    player: LessonPlayer | None = getattr(window, "lesson_player", None)
    if player is None:
        player = window.lesson_player = LessonPlayer(window)
    return player


def lesson_step(window: WindowHost, delta: int) -> bool:
    """Move a playing lesson by `delta` steps; False when no lesson plays (the keys then step stages)."""
    player: LessonPlayer | None = getattr(window, "lesson_player", None)
    if player is None or not player.active:
        return False
    player.step(delta)
    return True


def open_lesson(window: WindowHost, path: str | Path) -> Lesson | None:
    """Read a lesson, open its model if it is not the open one, and play it from step 1."""
    try:
        lesson = read_lesson(path)
    except LessonError as e:
        QMessageBox.warning(window, "Cannot open this lesson", str(e))
        return None
    s = window.session
    src, tgt = lesson.text_of(0)
    if _model_spec(window) != lesson.model:
        s.stage_key = lesson.steps[0].stage
        s.load_async(
            model_loader(lesson.model),
            path=None if lesson.model.startswith("bundled:") else lesson.model,
            src=src,
            tgt=tgt,
            prefix=tgt is None,
        )
        play_when_loaded(window, lesson)
    else:
        player_of(window).start(lesson)
    return lesson


def play_when_loaded(window: WindowHost, lesson: Lesson) -> None:
    """Start playing `lesson` as soon as the next model is open (its options are set then)."""
    window.session.modelChanged.connect(
        lambda _m: player_of(window).start(lesson), Qt.ConnectionType.SingleShotConnection
    )


def model_loader(spec: str) -> Callable[[], LiveModel]:
    """A loader for a lesson's model: 'bundled:NAME' or a checkpoint path."""

    def load() -> LiveModel:
        from attnlab.checkpoints import load_bundled, load_checkpoint

        if spec.startswith("bundled:"):
            return load_bundled(spec.split(":", 1)[1] or "translation")
        return load_checkpoint(spec)

    return load


def _model_spec(window: WindowHost) -> str | None:
    """How a lesson names the open model: its path, else 'bundled:NAME' for a bundled model."""
    s = window.session
    if s.model is None:
        return None
    if s.model_path:
        return s.model_path
    name = model_name(s.model)
    return f"bundled:{name}" if name in ("translation", "language") else None


# ---- writing a lesson ---------------------------------------------------------------------------------------
def current_step(window: WindowHost, note: str = "") -> Step:
    s = window.session
    return Step(
        stage=s.stage_key or "",
        note=note,
        toggles=toggles_of(s.options),
        head=s.view.head + 1,
        src=s.src,
        tgt=s.tgt if s.tgt else None,
    )


def add_current_stage(window: WindowHost, note: str | None = None) -> None:
    """Append the current stage (with its toggles, sentence and head) to the lesson being written."""
    if window.session.stage_key is None:
        return
    if note is None:
        note, ok = QInputDialog.getMultiLineText(
            window, "Add current stage to lesson", "A note for this step (shown above the panel):"
        )
        if not ok:
            return
    draft: list[Step] = getattr(window, "lesson_draft", None) or []
    draft.append(current_step(window, note))
    window.lesson_draft = draft
    window.statusBar().showMessage(f"Lesson: {len(draft)} step(s). File → Save lesson… writes them.", 6000)


def draft_lesson(window: WindowHost, title: str = "My lesson") -> Lesson:
    """The lesson Save lesson… writes: the added steps (or the current stage alone), on the open model."""
    s = window.session
    steps = tuple(getattr(window, "lesson_draft", None) or [current_step(window)])
    model = _model_spec(window) or "bundled:translation"
    return Lesson(title=title, model=model, src=steps[0].src or s.src, steps=steps)


def save_lesson(window: WindowHost, path: str | Path, title: str = "My lesson") -> Path:
    return write_text(path, lesson_toml(draft_lesson(window, title)))


def _save_dialog(window: WindowHost) -> None:
    if window.session.model is None:
        return
    path, _ = QFileDialog.getSaveFileName(window, "Save lesson", "lesson.toml", LESSON_FILTER)
    if not path:
        return
    title, ok = QInputDialog.getText(window, "Save lesson", "Title of the lesson:", text=Path(path).stem)
    try:
        written = save_lesson(window, path if path.endswith(".toml") else path + ".toml", title if ok else "Lesson")
    except OSError as e:
        QMessageBox.warning(window, "Cannot save the lesson", str(e))
        return
    window.statusBar().showMessage(f"Saved the lesson to {written}", 6000)


def _open_dialog(window: WindowHost) -> None:
    path, _ = QFileDialog.getOpenFileName(window, "Open a lesson", "", LESSON_FILTER)
    if path:
        open_lesson(window, path)


def add_lesson_actions(window: WindowHost, menu: QMenu) -> None:
    """File → Open lesson…, Save lesson…, Add current stage to lesson."""
    window._action(menu, "Open &lesson…", lambda: _open_dialog(window), name="openLessonAction")
    shipped = menu.addMenu("Open b&undled lesson")
    shipped.setObjectName("bundledLessonMenu")
    for path in bundled_lessons():
        try:
            title = read_lesson(path).title
        except LessonError:
            continue
        window._action(shipped, title, lambda _=False, p=path: open_lesson(window, p))
    window._action(menu, "&Save lesson…", lambda: _save_dialog(window), name="saveLessonAction")
    window._action(
        menu, "&Add current stage to lesson", lambda: add_current_stage(window), ["Ctrl+Shift+A"], "addLessonStepAction"
    )
    window._action(menu, "E&xport lesson answers…", lambda: _export_answers_dialog(window), name="exportAnswersAction")


# ---- the answers a class gave ---------------------------------------------------------------------------------
def export_answers(window: WindowHost, path: str | Path) -> Path:
    """Write the answers given to this session's lesson questions as CSV (lesson_answers.COLUMNS)."""
    return write_text(path, player_of(window).quiz.answers.csv_text())


def _export_answers_dialog(window: WindowHost) -> None:
    answers = player_of(window).quiz.answers
    if not len(answers):
        window.statusBar().showMessage("No lesson question has been answered yet in this session.", 6000)
        return
    path, _ = QFileDialog.getSaveFileName(window, "Export lesson answers", "answers.csv", "CSV (*.csv)")
    if not path:
        return
    try:
        written = export_answers(window, path if path.endswith(".csv") else path + ".csv")
    except OSError as e:
        QMessageBox.warning(window, "Cannot write the answers", str(e))
        return
    window.statusBar().showMessage(f"Wrote {len(answers)} answer(s) to {written}", 6000)
