"""Issue 38.7, the action side (tests/support/hostile_actions.py holds the cases the bench runs): chat templates
that would allocate gigabytes are stopped before they allocate, and the sandbox still renders what
transformers renders; hostile patches are refused in one line with run B unchanged; lesson files with
out-of-range or oversized questions are refused in one short line, and a question a run cannot answer says
why on its slide; a PDF or SVG export onto a full disk keeps the old file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import hostile_actions as h

ROOT = Path(__file__).resolve().parents[2]
ALLOCATING = [  # each allocated 1-3 GB (or ran into MemoryError) before it was measured first
    "repeat-1e10",
    "concat-doubling",
    "plus-doubling",
    "macro-doubling",
    "center-2e9",
    "method-ljust-2e9",
    "format-width",
    "percent-width",
    "join-bomb",
    "replace-bomb",
    "batch-fill",
    "tojson-indent",
    "print-references",
    "int-to-bytes",
    "folded-outputs",
    "folded-concat",
    "many-values-list",
    "many-values-call",
    "parens-100k",
]


def _child(code: str, *args: str) -> list:
    """Run `code` in a fresh Python (the repository importable); its last stdout line is JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_templates_that_would_allocate_are_stopped_before_they_allocate():
    # under a 1 GB address space: a template that allocates first meets MemoryError; one measured first is
    # refused naming the bound
    code = """
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from attnlab.engine.chat_template import ChatTemplateError, render
        from tests.support.hostile_actions import TEMPLATES
        said = []
        for name in sys.argv[1:]:
            try:
                said.append([name, "rendered " + str(len(render(TEMPLATES[name], [], True, {}, seconds=5.0)))])
            except ChatTemplateError as e:
                said.append([name, str(e)])
        print(json.dumps(said))
    """
    for name, message in _child(code, *ALLOCATING):
        assert "MemoryError" not in message and "ran past" not in message, (name, message)
        assert any(bound in message for bound in ("1,000,000", "4,096 bits", "128 MB", "100,000")), (name, message)
        assert "\n" not in message


@pytest.mark.parametrize("name", [n for n in h.TEMPLATES if "globals" in n or "escape" in n or "context" in n])
def test_sandbox_escapes_are_refused_and_run_no_code(tmp_path, name):
    from attnlab.engine.chat_template import ChatTemplateError

    folder = h.tokenizer_folder(tmp_path / "t", h.TEMPLATES[name])
    try:
        h.render_folder_template(str(folder))  # raises Broken if the marker file was written
    except ChatTemplateError as e:
        assert "\n" not in str(e)
    assert not (folder / h.MARK).exists()


BOUNDED_BUT_ORDINARY = (
    "{{ bos_token }}{% for m in messages %}{{ ('<|' ~ m.role ~ '|>').ljust(14) }}{{ m.content | trim | center(30) }}"
    "{{ '%-8s|%5.2f' % (m.role, loop.index / 3) }}{{ '{:>9}'.format(m.role) }}{{ m | tojson(indent=2) }}"
    "{{ [m.role, m.content] | join(', ') }}{{ (m.content * 3) | replace('o', '0') | wordwrap(12) }}"
    "{{ m.content | indent(4, true) }}{{ range(3) | batch(2, '-') | list }}{{ [[1], [2]] | sum(start=[]) }}"
    "{% set ns = namespace(s='') %}{% set ns.s = ns.s + m.role %}{{ ns.s }}{{ ','.join(['a', 'b']) }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def test_the_bounds_leave_ordinary_templates_as_transformers_renders_them():
    transformers = pytest.importorskip("transformers")
    from attnlab.engine.chat_template import render
    from tests.support.chat_families import FAMILIES, tiny_tokenizer

    messages = [{"role": "user", "content": "Hello, who are you?"}, {"role": "assistant", "content": "A bot."}]
    theirs = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tiny_tokenizer(FAMILIES["smollm2"]), chat_template=BOUNDED_BUT_ORDINARY, bos_token="<s>"
    )
    expected = theirs.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert render(BOUNDED_BUT_ORDINARY, messages, True, {"bos_token": "<s>"}) == expected


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("position-out-of-range", "position 999 is not one of them"),
        ("position-negative", "position -1 is not one of them"),
        ("nan-values", "NaN or infinity"),
        ("inf-values", "NaN or infinity"),
        ("integer-values", "floating point"),
        ("other-layer-count", "another model"),
        ("head-out-of-range", "head 100 is not one of them"),
    ],
)
def test_a_hostile_patch_is_refused_in_one_line_and_run_b_is_unchanged(kind, said):
    from attnlab.engine.options import OptionsError
    from attnlab.engine.patching import PatchError

    with pytest.raises((OptionsError, PatchError)) as caught:  # Broken (run B changed) would fail the test
        h.patch_case(kind)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_malformed_patch_is_refused_before_the_run():
    import torch

    from attnlab.engine.patching import Patch, PatchSource, patch_problems
    from tests.support.tiny import build_tiny_model

    live = build_tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=2)
    config = live.config
    value = torch.zeros(4, 32)  # [T, d]
    for patch in (
        Patch("dec.1.out", PatchSource(value, config), None, True),  # a bool position
        Patch("dec.1.out", PatchSource(value, config), None, 1.5),  # type: ignore[arg-type]
        Patch(12, PatchSource(value, config)),  # type: ignore[arg-type]
        Patch("dec.1.out", PatchSource([1.0], config)),  # type: ignore[arg-type]
    ):
        problems = patch_problems((patch,), config, 4)
        assert len(problems) == 1 and "\n" not in problems[0], patch


def _lesson(tmp_path: Path, name: str, question: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(h.LESSON_HEAD + question + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["head-digits-5000", "choices-10000", "text-100k"])
def test_an_oversized_question_is_refused_in_one_short_line(tmp_path, name):
    from attnlab.present.lessons import LessonError

    with pytest.raises(LessonError) as caught:
        h.read_lesson_case(str(_lesson(tmp_path, name, h.QUESTIONS[name])))
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_a_question_the_run_cannot_answer_says_why_on_its_slide(tmp_path):
    from attnlab.commands.render_slides import _question_line
    from attnlab.present.lessons import read_lesson
    from tests.support.tiny import build_tiny_model

    lesson = read_lesson(_lesson(tmp_path, "q", h.SOLVED["solve-head-99"]))
    live = build_tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=2)
    line = _question_line(lesson, 0, live.trace(lesson.src), live.output_tokenizer.id_to_token)
    assert "cannot be asked on this run" in line and "has 4 heads" in line


@pytest.mark.parametrize("fmt", ["pdf", "svg"])
def test_an_export_onto_a_full_disk_keeps_the_old_file(tmp_path, fmt):
    # a 4 KB file-size limit (SIGXFSZ ignored: writes fail with EFBIG, as on a full disk); Qt's own file
    # writes failed silently and the cut file was renamed over the old one
    target = tmp_path / f"deck.{fmt}"
    target.write_bytes(h.OLD)
    code = """
        import json, resource, signal, sys
        from pathlib import Path
        from PySide6.QtWidgets import QApplication, QLabel
        app = QApplication([])
        from attnlab.fileio import WriteError
        from attnlab.ui.window.export import save_svg
        from attnlab.ui.window.slides import Slide, write_pdf
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        target = Path(sys.argv[1])
        label = QLabel("a panel " * 400)
        label.resize(900, 600)
        try:
            if target.suffix == ".pdf":
                write_pdf(target, [Slide("h", "n" * 3000, label, "q")] * 3, "t")
            else:
                save_svg(label, target)
            print(json.dumps(["written", ""]))
        except WriteError as e:
            print(json.dumps(["refused", str(e)]))
    """
    outcome, message = _child(code, str(target))
    assert outcome == "refused" and str(target) in message and "\n" not in message
    assert target.read_bytes() == h.OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary file stays


def test_every_action_case_is_listed_with_an_importable_function(tmp_path):
    import importlib

    cases = h.action_cases(tmp_path)
    assert len(cases) >= 25
    for name, (target, args) in cases.items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name
        assert all(isinstance(a, str) for a in args), name
