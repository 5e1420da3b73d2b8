"""Lesson questions (present/lesson_questions.py, lesson_answers.py, ui/window/lesson_quiz.py): each kind's answer
against plain torch on the trace's own tensors, the bundled lessons' questions on the bundled model, the file
format's checks, and the window asking, taking a chip or a cell click, revealing on PageDown and exporting CSV."""

import csv
import io

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QListView

from attnlab.checkpoints import load_bundled
from attnlab.present.lesson_answers import COLUMNS, AnswerBook, answer_row
from attnlab.present.lesson_questions import Pick, Question, gives_away, parse_question, reveal_text, solve
from attnlab.present.lessons import LessonError, bundled_lessons, lesson_toml, parse_lesson, read_lesson
from attnlab.present.patch_request import patched_runs
from attnlab.present.texts import default_prefix

SRC, TGT = "the dog bites the man", "le chien mord"
WAIT = 20000


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


@pytest.fixture(scope="module")
def trace(translation):
    return translation.trace(SRC, TGT)


def vocab_of(model):
    return model.tgt_tokenizer.id_to_token


def reference(q: Question, trace, vocab):
    """(answer, its value) by plain torch on the trace's tensors: the argmax of the named row."""
    if q.measure == "weight":
        stack, layer, kind = q.site.split(".")
        q_side = "tgt" if stack == "dec" else "src"
        k_side = "src" if (stack == "enc" or kind == "cross") else "tgt"
        row = torch.as_tensor(trace[f"{q.site}.weights"])[q.head - 1, list(trace[f"{q_side}.tokens"]).index(q.query)]
        keys = list(trace[f"{k_side}.tokens"])
        if q.kind == "choice":
            best = max(q.choices, key=lambda c: max(float(row[i]) for i, t in enumerate(keys) if t == c))
            return best, max(float(row[i]) for i, t in enumerate(keys) if t == best)
        return keys[int(torch.argmax(row))], float(row.max())
    tokens = list(trace["tgt.tokens"])
    probs = torch.as_tensor(trace["probs"])[tokens.index(q.after) if q.after else len(tokens) - 1]  # [V]
    if q.kind == "choice":
        ids = {vocab(i): i for i in range(probs.shape[0])}
        best = max(q.choices, key=lambda c: float(probs[ids[c]]))
        return best, float(probs[ids[best]])
    return vocab(int(torch.argmax(probs))), float(probs.max())


@pytest.mark.parametrize(
    "table",
    [
        {"kind": "argmax_key", "site": "dec.2.cross", "head": 3, "query": "chien"},
        {"kind": "argmax_key", "site": "enc.0.self", "head": 2, "query": "dog"},
        {"kind": "argmax_key", "site": "dec.0.self", "head": 4, "query": "mord"},
        {"kind": "top_token"},
        {"kind": "top_token", "after": "chien"},
        {"kind": "choice", "of": "next", "choices": ["chien", "le", "homme"], "after": "le"},
        {"kind": "choice", "of": "weight", "site": "enc.1.self", "head": 1, "query": "man", "choices": ["dog", "man"]},
    ],
    ids=lambda t: "-".join(str(v) for v in t.values() if not isinstance(v, list)),
)
def test_each_kind_answers_what_torch_finds_in_the_trace(table, trace, translation):
    q = parse_question(table)
    vocab = vocab_of(translation)
    s = solve(q, trace, vocab)
    answer, value = reference(q, trace, vocab)
    assert s.answer == answer and s.value == pytest.approx(value, abs=1e-6)
    assert s.answer in s.choices and 2 <= len(s.choices) <= 4
    wrong = next(c for c in s.choices if c != s.answer)
    said = reveal_text(q, s, Pick(wrong))
    assert f"{value:.2f}" in said and f"“{wrong}” ({s.values[wrong]:.2f})" in said and said.endswith("not it.")
    assert reveal_text(q, s, Pick(answer)).endswith("right!")


def test_a_clicked_position_scores_its_own_weight(trace, translation):
    q = parse_question({"kind": "argmax_key", "site": "enc.0.self", "head": 1, "query": "dog"})
    s = solve(q, trace, vocab_of(translation))
    row = torch.as_tensor(trace["enc.0.self.weights"])[0, 1]  # [Tk]: the row of "dog" (position 1)
    for position in range(len(row)):  # "the" twice: each click scores the weight of the cell clicked
        assert s.value_of(Pick(s.tokens[position], position)) == pytest.approx(float(row[position]))


@pytest.mark.parametrize("path", bundled_lessons(), ids=lambda p: p.stem)
def test_bundled_lessons_ask_three_answerable_questions(path, translation):
    lesson = read_lesson(path)
    asked = [i for i, step in enumerate(lesson.steps) if step.question is not None]
    assert len(asked) == 3
    for i in asked:
        step = lesson.steps[i]
        assert not gives_away(step.stage, step.question), f"step {i + 1} shows its own answer"
        src, tgt = lesson.text_of(i)
        tgt = tgt if tgt is not None else default_prefix(translation, src)
        run = translation.trace(src, tgt, lesson.options(i))
        if step.patch is not None:  # issue 37: asked of the patched run, as the app shows it
            run = patched_runs(translation, src, tgt, lesson.options(i), (step.patch,))[2]
        s = solve(step.question, run, vocab_of(translation))
        assert (s.answer, pytest.approx(s.value, abs=1e-6)) == reference(step.question, run, vocab_of(translation))
        assert s.answer in s.choices and s.answer.lower() not in step.note.lower().split()


@pytest.mark.parametrize(
    "question, message",
    [
        ('{ kind = "argmax" }', "'kind' must be one of"),
        ('{ kind = "choice", choices = ["a", "b"] }', 'of = "next" or "weight"'),
        ('{ kind = "choice", of = "next" }', "needs 'choices'"),
        ('{ kind = "argmax_key", site = "dec.9", query = "x" }', "attention site"),
        ('{ kind = "argmax_key", site = "dec.0.self" }', "needs 'query'"),
        ('{ kind = "top_token", choices = ["a"] }', "2 to 4 strings"),
        ('{ kind = "top_token", head = 0 }', "counts from 1"),
        ('{ kind = "top_token", answer = "le" }', "unknown question key 'answer'"),
        ('"which?"', "must be a table"),
    ],
)
def test_bad_questions_name_the_step(question, message):
    text = f'src = "x"\n[[step]]\nstage = "src.tokens"\n[[step]]\nstage = "out.probs"\nquestion = {question}\n'
    with pytest.raises(LessonError) as info:
        parse_lesson(text)
    assert str(info.value).startswith("step 2: ") and message in str(info.value), str(info.value)


def test_questions_write_back_equal():
    text = (
        'src = "x"\n[[step]]\nstage = "src.tokens"\nquestion = { kind = "choice", of = "weight", site = "enc.0.self",'
        ' head = 2, query = "dog", occurrence = 2, choices = ["the", "\\"q\\""], text = "Which?" }\n'
    )
    lesson = parse_lesson(text)
    assert lesson.steps[0].question == Question(
        "choice", "Which?", "enc.0.self", 2, "dog", 2, "", ("the", '"q"'), "weight"
    )
    assert parse_lesson(lesson_toml(lesson)) == lesson


def test_a_question_this_run_cannot_answer_says_why(trace, translation):
    from attnlab.present.lesson_questions import QuestionError

    for table, words in [
        ({"kind": "argmax_key", "site": "dec.5.cross", "query": "le"}, "no attention site"),
        ({"kind": "argmax_key", "site": "dec.0.cross", "query": "chat"}, "'chat'"),
        ({"kind": "argmax_key", "site": "dec.0.cross", "head": 9, "query": "le"}, "has 4 heads"),
        ({"kind": "choice", "of": "next", "choices": ["le", "zzzq"]}, "'zzzq' is not a token"),
    ]:
        with pytest.raises(QuestionError, match=words):
            solve(parse_question(table), trace, vocab_of(translation))


def test_answers_csv_has_one_row_per_step_the_latest(trace, translation):
    q = parse_question({"kind": "top_token"})
    s = solve(q, trace, vocab_of(translation))
    book = AnswerBook()
    book.record(answer_row("L", 3, q, s, Pick("le")))
    book.record(answer_row("L", 3, q, s, Pick(s.answer)))  # answered again: replaces
    book.record(answer_row("L", 5, q, s, None))
    rows = list(csv.reader(io.StringIO(book.csv_text())))
    assert rows[0] == list(COLUMNS) and len(rows) == 3
    assert rows[1][:6] == ["L", "3", rows[1][2], s.answer, s.answer, "yes"]
    assert float(rows[1][6]) == pytest.approx(s.value, rel=1e-5)
    assert rows[2][3:6] == ["", s.answer, ""] and rows[2][6] == ""


# ---- the window ---------------------------------------------------------------------------------------------
ASKING = f"""title = "Quiz"
model = "bundled:translation"
src = "{SRC}"
tgt = "{TGT}"

[[step]]
stage = "src.tokens"
note = "Guess."
question = {{ kind = "argmax_key", site = "dec.2.cross", head = 3, query = "chien" }}

[[step]]
stage = "dec.0.cross.weights"
note = "Again, on a map."
question = {{ kind = "argmax_key", site = "dec.1.cross", head = 2, query = "le" }}

[[step]]
stage = "out.probs"
note = "The end."
"""


def quiz_window(qtbot, tmp_path, model, shown: bool = True):
    """A window on `model` playing the ASKING lesson, at its first step (a question, not yet answered)."""
    from attnlab.ui.window.lesson_actions import open_lesson
    from attnlab.ui.window.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    if shown:
        w.resize(1024, 768)
        w.show()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_model(model, SRC, TGT)
    path = tmp_path / "quiz.toml"
    path.write_text(ASKING, encoding="utf-8")
    open_lesson(w, path)  # a lesson presents
    qtbot.waitUntil(lambda: not w.session.busy and w.session.stage_key == "src.tokens", timeout=WAIT)
    return w


@pytest.mark.usefixtures("isolated_settings")
def test_window_asks_takes_a_click_reveals_and_exports(qtbot, tmp_path, translation):
    from attnlab.ui.plots.heatmap import LabeledHeatmap
    from attnlab.ui.window.lesson_actions import export_answers

    w = quiz_window(qtbot, tmp_path, translation)
    card = w.lesson_player.card
    weights = torch.as_tensor(w.session.trace["dec.2.cross.weights"])[2, 2]  # [Tk]: head 3, the row of "chien"
    best = float(weights.max())
    assert card.isVisible() and "“chien”" in card.question.text()
    assert f"{best:.2f}" not in card.status.text() and w.session.stage_key == "src.tokens"  # not shown yet

    chips = w.current_panel().findChild(QListView, "tokenChips")
    rect = chips.visualRect(chips.model().index(1, 0))  # the chip of "dog"
    qtbot.mouseClick(chips.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert "“dog”" in card.status.text()
    qtbot.keyClick(w, Qt.Key.Key_PageDown)  # reveals, does not move on
    qtbot.waitUntil(lambda: w.session.stage_key == "dec.2.cross.weights", timeout=WAIT)
    assert w.session.view.head == 2 and w.lesson_player.index == 0
    said = card.status.text()
    assert f"{best:.2f}" in said and f"“dog” ({float(weights[1]):.2f})" in said, said

    with qtbot.waitSignal(w.session.stageChanged, timeout=WAIT):
        qtbot.keyClick(w, Qt.Key.Key_PageDown)  # the next step, with its own question
    qtbot.waitUntil(lambda: not w.session.busy and w.session.stage_key == "dec.0.cross.weights", timeout=WAIT)
    heatmap = next(h for h in w.current_panel().findChildren(LabeledHeatmap) if h.isVisible())
    heatmap.cellClicked.emit(1, 0)  # a click on the column of "the"
    assert "“the”" in card.status.text()
    qtbot.keyClick(w, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: w.session.stage_key == "dec.1.cross.weights", timeout=WAIT)

    out = export_answers(w, tmp_path / "answers.csv")
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    keys = list(w.session.trace["src.tokens"])
    assert [r["step"] for r in rows] == ["1", "2"] and rows[0]["answer given"] == "dog"
    assert rows[0]["correct answer"] == keys[int(weights.argmax())]
    assert rows[0]["correct?"] == ("yes" if keys[int(weights.argmax())] == "dog" else "no")
    assert float(rows[0]["value"]) == pytest.approx(float(weights[1]), rel=1e-4)
    w.session.shutdown()


@pytest.mark.usefixtures("isolated_settings")
def test_a_press_during_the_run_reveals_from_the_run_that_follows(qtbot, tmp_path, translation):
    w = quiz_window(qtbot, tmp_path, translation, shown=False)
    # a new run is under way; the lesson's decoder input follows the new sentence ("le chien voit")
    w.session.set_src("the dog sees the man", debounce=False)
    assert w.session.busy
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.lesson_player.step(1)
        assert w.lesson_player.card.status.text() == "Running the model…"
    qtbot.waitUntil(lambda: w.session.stage_key == "dec.2.cross.weights", timeout=WAIT)
    trace = w.session.trace
    assert list(trace["src.tokens"])[2] == "sees" and "chien" in list(trace["tgt.tokens"])
    weights = torch.as_tensor(trace["dec.2.cross.weights"])[2, list(trace["tgt.tokens"]).index("chien")]
    assert f"put {float(weights.max()):.2f} on “{list(trace['src.tokens'])[int(weights.argmax())]}”" in (
        w.lesson_player.card.status.text()
    )
    w.session.shutdown()


@pytest.mark.usefixtures("isolated_settings")
def test_the_letter_keys_answer_from_whatever_has_the_focus(qtbot, tmp_path, translation):
    """The card says "Answer with A–D": presenting, the letter picks that choice wherever the focus rests (its
    buttons take no focus), and the sentence is not typed into."""
    w = quiz_window(qtbot, tmp_path, translation)
    card, quiz = w.lesson_player.card, w.lesson_player.quiz
    assert w.presenting and quiz.waiting
    for focus in (w.inputs.src, w.stage_area):
        focus.setFocus()
        qtbot.keyClick(QApplication.focusWidget() or w, Qt.Key.Key_B)
        second = quiz.solution.choices[1]
        assert quiz.pick is not None and quiz.pick.text == second and f"“{second}”" in card.status.text()
        assert w.inputs.src.text() == SRC
        quiz.pick = None
    qtbot.keyClick(QApplication.focusWidget() or w, Qt.Key.Key_E)  # E still shows the explanation
    assert quiz.pick is None
    w.session.shutdown()
