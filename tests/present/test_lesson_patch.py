"""A lesson step's `patch` key (issue 37): run A named by its sentence, computed when the step plays; refusals in
one line naming the step; the bundled patching lesson's runs against the Python API's RunOptions.patch (which
tests/engine/test_patching_hf.py checks against plain torch hooks on transformers' models); the app playing a
patch step (run A pinned, run B patched, the next step without a patch unpinned)."""

import pytest
import torch
from PySide6.QtCore import Qt

from attnlab.checkpoints import load_bundled, save_checkpoint
from attnlab.engine.options import RunOptions
from attnlab.engine.patch_sweep import patch_from
from attnlab.engine.patching import PatchError
from attnlab.present.lessons import LessonError, bundled_lessons, lesson_toml, parse_lesson, patch_problems, read_lesson
from attnlab.present.patch_request import PatchAsk, patch_of, patched_runs
from attnlab.ui.window.lesson_actions import open_lesson
from attnlab.ui.window.main_window import MainWindow

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py

WAIT = 20000
A, B = "the small cat sees the black dog", "the black cat sees the small dog"  # the tiny model's words, 8 tokens
LESSON = f"""title = "p"
src = "{B}"
tgt = "le chat"
[[step]]
stage = "src.tokens"
note = "one"
[[step]]
stage = "out.probs"
patch = {{ from = "{A}", entry = "dec.1.cross.context", position = 2, head = 3 }}
note = "two"
[[step]]
stage = "out.probs"
note = "three"
"""
PATCH_LINE = f'patch = {{ from = "{A}", entry = "dec.1.cross.context", position = 2, head = 3 }}'


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


def test_the_patch_key_reads_and_writes_back():
    lesson = parse_lesson(LESSON)
    assert lesson.steps[1].patch == PatchAsk(A, "dec.1.cross.context", head=3, position=2)
    assert lesson.steps[0].patch is None
    assert parse_lesson(lesson_toml(lesson)) == lesson
    with_tgt = parse_lesson(LESSON.replace("head = 3 }", 'head = 3, from_tgt = "le chien" }'))
    assert with_tgt.steps[1].patch.tgt == "le chien"
    assert parse_lesson(lesson_toml(with_tgt)) == with_tgt


@pytest.mark.parametrize(
    "patch, message",
    [
        ('patch = "dec.1.out"', "'patch' must be a table"),
        ('patch = { entry = "dec.1.out" }', "the patch needs 'from'"),
        (f'patch = {{ from = "{A}" }}', "the patch needs 'entry'"),
        (f'patch = {{ from = "{A}", entry = "dec.1.cross.weights" }}', "'dec.1.cross.weights' cannot be patched"),
        (f'patch = {{ from = "{A}", entry = "out.probs" }}', "'out.probs' cannot be patched"),
        (f'patch = {{ from = "{A}", entry = "dec.1.out", head = 0 }}', "'head' (counted from 1) must be"),
        (f'patch = {{ from = "{A}", entry = "dec.1.out", position = -1 }}', "'position' (counted from 0) must be"),
        (f'patch = {{ from = "{A}", entry = "dec.1.out", position = true }}', "must be a whole number"),
        (f'patch = {{ from = "{A}", entry = "dec.1.out", layer = 2 }}', "unknown patch key 'layer'"),
        ('patch = { from = "", entry = "dec.1.out" }', "'from' must be 1 to"),
    ],
)
def test_bad_patch_keys_name_the_step_in_one_line(patch, message):
    with pytest.raises(LessonError) as info:
        parse_lesson(LESSON.replace(PATCH_LINE, patch))
    said = str(info.value)
    assert said.startswith("step 2: ") and message in said and "\n" not in said, said


def test_layers_the_model_lacks_are_named_once_it_is_open(translation):
    lesson = parse_lesson(LESSON.replace("dec.1.cross.context", "dec.3.cross.context"))
    assert patch_problems(lesson, translation.config) == [
        "step 2: patch dec.3.cross.context: this model has 3 decoder layers (dec.0 to dec.2)"
    ]
    assert patch_problems(parse_lesson(LESSON), translation.config) == []


def test_positions_and_heads_out_of_range_are_refused_in_one_line(translation):
    a = translation.trace("the black cat sees the small dog", "le chat")
    with pytest.raises(PatchError, match=r"position 3 is out of range; run A has 3 positions there \(0 to 2\)"):
        patch_of(PatchAsk("x", "dec.2.cross.out", position=3), a)
    with pytest.raises(PatchError, match="has 4 heads; head 5 is not one of them"):
        patch_of(PatchAsk("x", "dec.2.cross.context", head=5), a)
    with pytest.raises(PatchError, match="enc.1.out: it has no heads"):
        patch_of(PatchAsk("x", "enc.1.out", head=1), a)
    with pytest.raises(PatchError, match="run A has 6 tokens and run B 8"):
        patched_runs(translation, B, "le chat", RunOptions(), (PatchAsk("the cat sees the dog", "dec.2.out"),))


def _noir_minus_blanc(model, trace) -> float:
    vocab = model.output_tokenizer.vocab
    row = torch.as_tensor(trace["logits"])[-1]  # [V]
    return float(row[vocab.index("noir")] - row[vocab.index("blanc")])


def test_the_bundled_patching_lesson_equals_the_python_api(translation):
    """Each patch step's run equals RunOptions.patch with run A's value taken by patch_from, and the notes' words
    hold: the colour word's encoder column and the last layer's cross-attention at "chat" flip the answer to
    "noir"; the other patches leave "blanc"."""
    path = next(p for p in bundled_lessons() if p.stem == "patching-cross-attention")
    lesson = read_lesson(path)
    flips = {}
    for i, step in enumerate(lesson.steps):
        if step.patch is None:
            continue
        src, tgt = lesson.text_of(i)
        a, b, patched = patched_runs(translation, src, tgt, lesson.options(i), (step.patch,))
        ask = step.patch
        reference_a = translation.trace(ask.src, tgt)
        head = None if ask.head is None else ask.head - 1
        patch = patch_from(reference_a, ask.entry, head, ask.position)
        reference = translation.trace(src, tgt, RunOptions(patch=(patch,)))
        assert torch.equal(torch.as_tensor(patched["logits"]), torch.as_tensor(reference["logits"])), f"step {i + 1}"
        top = translation.output_tokenizer.id_to_token(int(torch.as_tensor(patched["logits"])[-1].argmax()))
        flips[(ask.entry, ask.position, ask.head)] = top
        assert _noir_minus_blanc(translation, a) > 0 > _noir_minus_blanc(translation, b)
    assert flips == {
        ("enc.2.out", 1, None): "noir",
        ("enc.2.out", 2, None): "blanc",
        ("dec.0.cross.out", 2, None): "blanc",
        ("dec.1.cross.out", 2, None): "blanc",
        ("dec.2.cross.out", 1, None): "blanc",
        ("dec.2.cross.out", 2, None): "noir",
        ("dec.2.self.out", 2, None): "blanc",
        ("dec.2.cross.context", 2, 1): "blanc",
    }


def test_the_app_plays_a_patch_step(qtbot, tmp_path, tiny_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    s = w.session
    with qtbot.waitSignal(s.traceReady, timeout=WAIT):
        s.set_model(tiny_model(), B, "le chat")
    save_checkpoint(s.model, tmp_path / "m.safetensors")
    s.model_path = str(tmp_path / "m.safetensors")  # the lesson's model is the open one
    lesson_file = tmp_path / "patch.toml"
    lesson_file.write_text(LESSON.replace('title = "p"', f'title = "p"\nmodel = "{tmp_path / "m.safetensors"}"'))
    open_lesson(w, lesson_file)
    qtbot.waitUntil(lambda: not s.busy and s.stage_key == "src.tokens", timeout=WAIT)
    assert s.pinned is None and not s.options.patch
    qtbot.keyClick(w, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: not s.busy and s.trace is not None and bool(s.trace.options.patch), timeout=WAIT)
    (patch,) = s.options.patch
    assert (patch.entry, patch.head, patch.position) == ("dec.1.cross.context", 2, 2)
    assert s.pinned["src.tokens"] == A.split() + ["</s>"]
    reference_a = s.model.trace(A, "le chat")
    reference = s.model.trace(B, "le chat", RunOptions(patch=(patch_from(reference_a, patch.entry, 2, 2),)))
    # the window's run resumes at the patched layer on its worker thread: equal to float rounding
    torch.testing.assert_close(
        torch.as_tensor(s.trace["logits"]), torch.as_tensor(reference["logits"]), atol=1e-5, rtol=0
    )
    qtbot.keyClick(w, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: not s.busy and s.trace is not None and not s.trace.options.patch, timeout=WAIT)
    assert s.pinned is None and "three" in w.findChild(type(w.stage_title), "lessonNote").text()
    s.shutdown()
