"""Lessons: the TOML format (read, checked, written back), the two shipped lessons against a real run of the
bundled model, and the app walking a lesson with the clicker keys."""

import pytest
from PySide6.QtCore import Qt

from attnlab.checkpoints import load_bundled
from attnlab.engine.options import RunOptions
from attnlab.present.lessons import (
    MAX_BYTES,
    Lesson,
    LessonError,
    Step,
    bundled_lessons,
    lesson_toml,
    parse_lesson,
    patch_problems,
    read_lesson,
    stage_problems,
)
from attnlab.present.patch_request import patched_runs
from attnlab.present.stages import stages_for
from attnlab.ui.window.lesson_actions import open_lesson, save_lesson
from attnlab.ui.window.main_window import MainWindow

WAIT = 20000
GOOD = """title = "t"
src = "the dog bites the man"
[[step]]
stage = "src.tokens"
note = "one"
[[step]]
stage = "enc.0.self.weights"
toggles = { positional = false, n_heads = 8, causal = { "dec.self" = false } }
note = "two"
"""


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


def test_parse_applies_toggles_over_the_defaults():
    lesson = parse_lesson(GOOD)
    assert lesson.model == "bundled:translation" and [s.stage for s in lesson.steps] == [
        "src.tokens",
        "enc.0.self.weights",
    ]
    assert lesson.options(0) == RunOptions()
    assert lesson.options(1) == RunOptions(positional=False, n_heads=8).with_causal("dec.self", False)


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace("positional = false", "positionl = false"), "unknown key 'positionl'"),
        (GOOD.replace("positional = false", "positional = 0"), "toggle 'positional' must be true or false"),
        (GOOD.replace("n_heads = 8", "n_heads = true"), "toggle 'n_heads' must be a whole number"),
        (GOOD.replace('stage = "src.tokens"', "stage = 3"), "step 1: 'stage' must be a string"),
        (GOOD.replace('stage = "src.tokens"\n', ""), "step 1: 'stage' is missing"),
        (GOOD.replace('title = "t"', 'title = "t"\nnorm = "pre"'), "unknown key 'norm'"),
        (GOOD.replace('"dec.self"', '"dec.selff"'), "toggle 'causal' maps a site kind"),
        (GOOD.replace("[[step]]", "[[step]"), "not valid TOML"),
        ('title = "t"\nsrc = "x"\n', "at least one [[step]]"),
        (GOOD + "#" * MAX_BYTES, "at most 256 KB"),
    ],
)
def test_bad_lessons_say_what_is_wrong(text, message):
    with pytest.raises(LessonError, match=None) as info:
        parse_lesson(text, "bad.toml")
    assert message in str(info.value), str(info.value)


def test_unknown_stage_is_reported_against_a_run(translation):
    lesson = parse_lesson(GOOD.replace("enc.0.self.weights", "enc.7.self.weights"))
    keys = [s.key for s in stages_for(translation.trace("the dog", ""))]
    assert stage_problems(lesson, keys) == ["step 2: no stage called 'enc.7.self.weights' in this model"]


def test_written_lessons_read_back_equal(tmp_path):
    lesson = Lesson(
        title='quote " and \\ and é',
        model="bundled:translation",
        src="a\nb",
        tgt="le",
        toggles={"norm": "pre"},
        steps=(Step("src.tokens", 'note "1"'), Step("out.probs", "", {"temperature": 0.5}, head=2, src="x")),
    )
    assert parse_lesson(lesson_toml(lesson)) == lesson


@pytest.mark.parametrize("path", bundled_lessons(), ids=lambda p: p.stem)
def test_shipped_lessons_fit_the_bundled_model(path, translation):
    lesson = read_lesson(path)
    assert lesson.model == "bundled:translation"
    assert 10 <= len(lesson.steps) <= 20
    for i, step in enumerate(lesson.steps):
        assert step.note.strip(), f"step {i + 1} has no note"
        options = lesson.options(i)
        assert translation.options_problems(options) == [], f"step {i + 1}"
        src, tgt = lesson.text_of(i)
        trace = translation.trace(src, tgt or "", options)
        if step.patch is not None:  # issue 37: run A from its sentence, this step's run patched from it
            assert patch_problems(lesson, translation.config) == []
            trace = patched_runs(translation, src, tgt or "", options, (step.patch,))[2]
        assert (
            stage_problems(Lesson(lesson.title, lesson.model, src, (step,)), [s.key for s in stages_for(trace)]) == []
        ), f"step {i + 1}"


def test_three_lessons_ship():
    assert {read_lesson(p).title for p in bundled_lessons()} == {
        "The Transformer step by step",
        "What each toggle breaks",
        "Ask the model why: patch one run into another",
    }


def test_app_walks_a_lesson_with_page_down(qtbot, tmp_path, tiny_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_model(tiny_model(), "the black cat sees the dog", "le chat")
    lesson_file = tmp_path / "walk.toml"
    lesson_file.write_text(
        GOOD.replace('model = "', 'x = "')
        .replace(
            'src = "the dog bites the man"', 'src = "the black cat"\nmodel = "' + str(tmp_path / "m.safetensors") + '"'
        )
        .replace("n_heads = 8", "n_heads = 2"),
        encoding="utf-8",
    )
    from attnlab.checkpoints import save_checkpoint

    save_checkpoint(w.session.model, tmp_path / "m.safetensors")
    w.session.model_path = str(tmp_path / "m.safetensors")  # the lesson's model is the open one
    open_lesson(w, lesson_file)
    qtbot.waitUntil(lambda: not w.session.busy and w.session.stage_key == "src.tokens", timeout=WAIT)
    note = w.findChild(type(w.stage_title), "lessonNote")
    assert note.isVisible() and "one" in note.text() and "step 1 of 2" in note.text()
    assert w.session.src == "the black cat"
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        qtbot.keyClick(w, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    assert w.session.stage_key == "enc.0.self.weights"
    assert w.session.trace.options.positional is False and w.session.trace.n_heads == 2
    assert w.session.options.is_causal("dec.0.self") is False
    assert "two" in note.text()
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        qtbot.keyClick(w, Qt.Key.Key_PageUp)
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    assert w.session.stage_key == "src.tokens" and w.session.trace.options.positional is True
    save_lesson(w, tmp_path / "saved.toml", "again")
    saved = read_lesson(tmp_path / "saved.toml")
    assert saved.model == str(tmp_path / "m.safetensors") and saved.steps[0].stage == "src.tokens"
    assert saved.title == "again" and len(saved.steps) == 1 and saved.steps[0].src == "the black cat"
    w.session.shutdown()


def test_app_command_refuses_a_bad_lesson(tmp_path, capsys):
    from attnlab.cli import main

    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("positional = false", "colour = 1"), encoding="utf-8")
    assert main([str(bad)]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err
