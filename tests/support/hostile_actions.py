"""Issue 38.7, the action side: hostile chat templates, patches, lesson questions and PDF/GIF exports, each one
thing done through attnlab's public API, for benchmarks/hostile_surfaces_bench.py (which runs each in a fresh
child under its limits) and tests/robustness/test_hostile_round3_actions.py.

    action_cases(d) -> {case name: ("module:function", [string arguments])}   (files written under d)

A case function returns normally when attnlab handled the input (a short string says how) or raises what
attnlab raised. Beyond attnlab's answer, each function checks what attnlab cannot say itself and raises
`Broken` (a RuntimeError, never raised by attnlab) when it went wrong: a sandbox escape wrote its marker file
(code ran), a refused patch changed run B's numbers (state changed), an export changed or removed the file it
was refused onto or left a temporary file behind (data lost / left behind).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = "tests.support.hostile_actions"
MARK = "code-ran.txt"  # what a sandbox escape would create in the case's folder


class Broken(RuntimeError):
    """What went wrong past attnlab's answer (code ran, state changed, data lost, files left behind)."""


# ---- chat templates ------------------------------------------------------------------------------------------
S = "{% set s = 'x' * 900000 %}"  # a text just under the 1,000,000-character bound
ESCAPE = "os.popen('touch " + "{mark}" + "').read()"
TEMPLATES = {
    "loop-forever": "{% for i in range(10**9) %}x{% endfor %}",
    "loops-nested": "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
    "macro-recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(1) }}",
    "macros-mutual": "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}",
    "repeat-1e10": "{{ 'x' * 10**10 }}",
    "concat-doubling": S + "".join("{% set s = s ~ s %}" for _ in range(12)) + "{{ s | length }}",
    "plus-doubling": S + "".join("{% set s = s + s %}" for _ in range(12)) + "{{ s | length }}",
    "macro-doubling": "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% endif %}{% endmacro %}{{ d('x', 40) }}",
    "center-2e9": "{{ 'x' | center(2000000000) | length }}",
    "method-ljust-2e9": "{{ 'x'.ljust(2000000000) | length }}",
    "format-width": "{{ '{:>2000000000}'.format('') | length }}",
    "percent-width": "{{ ('%2000000000d' % 1) | length }}",
    "join-bomb": S + "{{ range(99999) | join(s) | length }}",
    "replace-bomb": S + "{{ s | replace('x', s) | length }}",
    "batch-fill": "{{ range(3) | batch(2000000000, 'x') | list | length }}",
    "tojson-indent": "{{ [[1]] | tojson(indent=2000000000) | length }}",
    "print-references": S + "{{ [s] * 999999 }}",
    "macro-buffer": S + "{% macro m() %}{% for i in range(99999) %}{{ s }}{% endfor %}{% endmacro %}{{ m() | length }}",
    "int-to-bytes": "{{ (1).to_bytes(2000000000, 'big') | length }}",
    "lipsum-1e8": "{{ lipsum(100000000) | length }}",
    "folded-outputs": "{{ 'x' | center(999999) }}" * 3000,  # once worked out while compiling
    "folded-concat": "{{ " + " ~ ".join(["('x' | center(999999))"] * 3000) + " | length }}",
    "many-values-list": "{% set l = [" + ", ".join(["('x' | center(999999))"] * 3000) + "] %}{{ l | length }}",
    "many-values-call": "{% macro m() %}{{ varargs | length }}{% endmacro %}{{ m("
    + ", ".join(["('x' | center(999999))"] * 3000)
    + ") }}",
    "parens-100k": "{{ " + "(" * 100_000 + "1" + ")" * 100_000 + " }}",
    "blocks-nested-300": "{% for i in range(2) %}" * 300 + "x" + "{% endfor %}" * 300,
    "huge-output": "{% for i in range(99999) %}{% for j in range(99) %}0123456789{% endfor %}{% endfor %}",
    "undefined-things": "{{ nothing.attr.deeper }}{{ messages[99].content }}",
    "mro-subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "cycler-globals": "{{ cycler.__init__.__globals__." + ESCAPE + " }}",
    "joiner-globals": "{{ joiner.__init__.__globals__." + ESCAPE + " }}",
    "lipsum-globals": "{{ lipsum.__globals__['os'].popen('touch {mark}') }}",
    "template-context": "{{ self._TemplateReference__context.cycler.__init__.__globals__." + ESCAPE + " }}",
    "namespace-globals": "{{ namespace.__init__.__globals__['sys'].modules['os'].popen('touch {mark}') }}",
    "namespace-dunder": "{% set ns = namespace() %}{% set ns.__class__ = 1 %}",
    "raise-exception-globals": "{{ raise_exception.__globals__['sys'].modules['os'].popen('touch {mark}') }}",
    "format-field-escape": "{{ '{0.__class__.__mro__[1].__subclasses__}'.format('') }}",
    "attr-filter-escape": "{{ cycler | attr('__init__') | attr('__globals__') }}",
    "mutate-messages": "{{ messages.append(1) }}{{ messages[0].update({'role': 'x'}) }}",
}


def tokenizer_folder(folder: Path, template: str | None) -> Path:
    """The files a model folder's chat template is read from: tokenizer_config.json (named special tokens) and
    chat_template.jinja (as transformers writes it)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ 'unused' }}"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    if template is not None:
        (folder / "chat_template.jinja").write_text(template.replace("{mark}", str(folder / MARK)), encoding="utf-8")
    return folder


def render_folder_template(folder: str) -> str:
    """Read the folder's chat template as a checkpoint is read and render a two-turn conversation with it."""
    from attnlab.checkpoints.chat_files import chat_metadata
    from attnlab.checkpoints.errors import Problems
    from attnlab.engine.chat_template import render

    path = Path(folder)
    problems = Problems(path)
    meta = chat_metadata(path, problems)
    try:
        problems.raise_if_any()
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        text = render(meta["chat_template"], messages, True, meta["chat_specials"])
    finally:
        if (path / MARK).exists():
            raise Broken(f"code ran: the template wrote {path / MARK}")
    return f"rendered {len(text):,} characters"


def trace_chat_cli(folder: str, conversation: str, out: str) -> str:
    """`attnlab trace --checkpoint FOLDER --chat CONVERSATION --out OUT`: SystemExit(code) when refused."""
    from attnlab.cli import main

    code = main(["trace", "--checkpoint", folder, "--chat", conversation, "--out", out])
    if (Path(folder) / MARK).exists():
        raise Broken(f"code ran: the template wrote {Path(folder) / MARK}")
    if code:
        raise SystemExit(code)
    return "traced"


CLI_TEMPLATES = ("center-2e9", "concat-doubling", "cycler-globals", "loops-nested")


def _cli_chat_cases(d: Path) -> dict[str, tuple[str, list[str]]]:
    """A tiny Llama folder (tests/support/chat_families.py) per template, traced through the CLI."""
    import shutil

    import transformers

    from tests.support.chat_families import chat_folder

    transformers.utils.logging.disable_progress_bar()  # the bench prints its own table
    out: dict[str, tuple[str, list[str]]] = {}
    _model, base = chat_folder(d / "cli-chat-base", "smollm2", as_file=True)
    conversation = base / "conversation.json"
    conversation.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    for name in CLI_TEMPLATES:
        folder = d / f"cli-chat-{name}"
        shutil.copytree(base, folder)
        (folder / "chat_template.jinja").write_text(TEMPLATES[name].replace("{mark}", str(folder / MARK)))
        out[f"cli-chat-{name}"] = (f"{HERE}:trace_chat_cli", [str(folder), str(conversation), str(folder / "run.npz")])
    return out


# ---- patches -------------------------------------------------------------------------------------------------
A, B = "the black cat sees the dog", "the small dog sees the cat"


def patch_case(kind: str) -> str:
    """Run B of a tiny decoder-only model with a hostile patch; run B's numbers must be unchanged after."""
    import torch

    from attnlab.engine.options import RunOptions
    from attnlab.engine.patch_sweep import cells_of, check_pair, patch_from
    from attnlab.engine.patching import Patch, PatchSource
    from tests.support.tiny import build_tiny_model

    def model(layers: int = 3, seed: int = 3):  # type: ignore[no-untyped-def]
        return build_tiny_model("decoder-only", seed=seed, n_encoder_layers=0, n_decoder_layers=layers)

    live = model()
    a, before = live.trace(A), live.trace(B).device_value("logits").clone()  # [T, V]
    whole = patch_from(a, "dec.1.out")
    value = whole.source.value  # [T, d]
    make = {
        "other-layer-count": lambda: patch_from(model(layers=4).trace(A), "dec.1.out"),
        "other-head-count": lambda: patch_from(
            build_tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=3, n_heads=2).trace(A),
            "dec.1.self.context",
            head=1,
        ),
        "other-length": lambda: patch_from(live.trace("the cat"), "dec.1.out"),
        "position-out-of-range": lambda: patch_from(a, "dec.1.out", position=999),
        "position-negative": lambda: patch_from(a, "dec.1.out", position=-1),
        "head-out-of-range": lambda: patch_from(a, "dec.1.self.context", head=99),
        "nan-values": lambda: Patch("dec.1.out", PatchSource(torch.full_like(value, float("nan")), a.config), None, 2),
        "inf-values": lambda: Patch("dec.1.out", PatchSource(torch.full_like(value, float("inf")), a.config)),
        "entry-missing": lambda: patch_from(a, "dec.9.out"),
        "entry-not-patchable": lambda: patch_from(a, "dec.1.self.weights"),
        "entry-of-absent-layer": lambda: Patch("dec.7.out", whole.source),
        "integer-values": lambda: Patch("dec.1.out", PatchSource(value.to(torch.int64), a.config)),
        "same-config-other-weights": lambda: patch_from(model(seed=4).trace(A), "dec.1.out"),
    }
    try:
        if kind == "map-of-cross-attention":
            cells_of(a, "cross")
            return "swept"
        if kind == "pair-other-lengths":
            check_pair(a, live.trace("the cat"))
            return "paired"
        live.trace(B, None, RunOptions(patch=(make[kind](),)))
        return "patched run"
    finally:
        if not torch.equal(live.trace(B).device_value("logits"), before):
            raise Broken("state changed: run B's logits differ after the patch")


# ---- lesson questions ----------------------------------------------------------------------------------------
LESSON_HEAD = 'title = "t"\nsrc = "the black cat sees the small dog"\n[[step]]\nstage = "dec.0.self.weights"\n'
WORDS = ", ".join(f'"w{i}"' for i in range(10_000))
QUESTIONS = {
    "answer-given": 'question = { kind = "top_token", answer = 7 }',
    "head-negative": 'question = { kind = "argmax_key", site = "dec.0.self", head = -1, query = "cat" }',
    "head-digits-5000": 'question = { kind = "argmax_key", site = "dec.0.self", head = ' + "9" * 5000 + " }",
    "head-float": 'question = { kind = "argmax_key", site = "dec.0.self", head = 1.5, query = "cat" }',
    "choices-10000": 'question = { kind = "choice", of = "next", choices = [' + WORDS + "] }",
    "choices-numbers": 'question = { kind = "choice", of = "next", choices = [1, 2, 3] }',
    "kind-missing": 'question = { text = "which?" }',
    "question-string": 'question = "which token comes next?"',
    "text-100k": 'question = { kind = "top_token", text = "' + "a" * 100_000 + '" }',
    "text-zalgo": 'question = { kind = "top_token", text = "a' + "\\u0301" * 499 + '" }',
    "text-controls": 'question = { kind = "top_token", text = "\\u202e\\u0000\\ufeff\\u200b which?" }',
    "nesting-100k": 'question = { kind = "top_token", text = ' + "[" * 100_000 + "]" * 100_000 + " }",
}
SOLVED = {  # read fine, refused when answered from a run
    "solve-head-99": 'question = { kind = "argmax_key", site = "dec.0.self", head = 99, query = "cat" }',
    "solve-head-2e63": 'question = { kind = "argmax_key", site = "dec.0.self", head = '
    + str(2**63 - 1)
    + ', query = "cat" }',
    "solve-site-absent": 'question = { kind = "argmax_key", site = "dec.99999999999.self", query = "cat" }',
    "solve-query-absent": 'question = { kind = "argmax_key", site = "dec.0.self", query = "zebra", occurrence = 99 }',
    "solve-choice-absent": 'question = { kind = "choice", of = "next", choices = ["zebra", "quagga"] }',
}


def read_lesson_case(path: str) -> str:
    """Read a lesson file and say each of its questions (what the lesson player and the PDF show)."""
    from attnlab.present.lesson_questions import question_text
    from attnlab.present.lessons import read_lesson

    lesson = read_lesson(path)
    said = [question_text(s.question) for s in lesson.steps if s.question is not None]
    return f"read {len(lesson.steps)} step(s), {sum(map(len, said)):,} characters of questions"


def solve_lesson_case(path: str) -> str:
    """Read a lesson and answer each question from a run of the tiny decoder-only model."""
    from attnlab.present.lesson_questions import solve
    from attnlab.present.lessons import read_lesson
    from tests.support.tiny import build_tiny_model

    lesson = read_lesson(path)
    live = build_tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=2)
    for i, step in enumerate(lesson.steps):
        if step.question is not None:
            solve(step.question, live.trace(lesson.text_of(i)[0]), live.output_tokenizer.id_to_token)
    return "answered"


# ---- PDF and GIF exports -------------------------------------------------------------------------------------
OLD = b"the teacher's old deck\n"


def _slides(count: int = 2):  # type: ignore[no-untyped-def]
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication, QLabel

    from attnlab.ui.window.slides import Slide

    QApplication.instance() or QApplication([])
    return [Slide(f"header {i}", "a note \u202e\u0000", QLabel(f"panel {i}"), "Question: which?") for i in range(count)]


def _listing(folder: Path) -> set[str]:
    return set(os.listdir(folder)) if folder.is_dir() else set()


def export_case(fmt: str, target: str, hostile: str = "") -> str:
    """Write a 2-slide PDF or GIF to `target` (`hostile`: "full-disk" (a 4 KB file-size limit: writes fail
    with EFBIG), "enospc" (the bytes' writer fails half-way with ENOSPC)); the file that was there must be
    intact after a refusal and no temporary file may stay."""
    from attnlab.ui.window.slides import write_gif, write_pdf

    path = Path(target)
    folder = path.parent
    old = path.read_bytes() if path.is_file() else None
    listed = _listing(folder)
    slides = _slides()
    if hostile == "full-disk":
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    if hostile == "enospc":
        _fail_half_way()
    try:
        written, count = write_pdf(path, slides, "t") if fmt == "pdf" else write_gif(path, slides)
    except BaseException:
        if old is not None and (not path.is_file() or path.read_bytes() != old):
            raise Broken(f"data lost: {path} changed although the export was refused") from None
        if _listing(folder) != listed:
            raise Broken(f"left behind: {sorted(_listing(folder) - listed)} in {folder}") from None
        raise
    if _listing(folder) - listed - {path.name}:
        raise Broken(f"left behind: {sorted(_listing(folder) - listed - {path.name})} in {folder}")
    ending = b"%%EOF" if fmt == "pdf" else b";"  # a PDF's last line, a GIF's trailer byte
    if not path.read_bytes().rstrip().endswith(ending):
        raise Broken(f"data lost: {path} was replaced by a cut file ({path.stat().st_size:,} bytes)")
    return f"wrote {count} {'pages' if fmt == 'pdf' else 'frames'}" + (" over the old file" if old else "")


def _fail_half_way() -> None:
    """Every whole-file write of bytes (Path.write_bytes, Pillow's save) stops half-way with ENOSPC."""
    import errno

    from PIL import Image

    def fail(path: Path, data: bytes) -> int:
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    Path.write_bytes = lambda self, data: fail(self, bytes(data))  # type: ignore[method-assign,assignment]
    Image.Image.save = lambda self, fp, *a, **k: fail(Path(str(fp)), b"GIF89a" * 1000)  # type: ignore[method-assign,assignment]


# ---- the case list ---------------------------------------------------------------------------------------------
def action_cases(d: Path) -> dict[str, tuple[str, list[str]]]:
    """case name -> ("module:function", [string arguments]); files the case needs are written under d."""
    cases: dict[str, tuple[str, list[str]]] = {}
    for name, template in TEMPLATES.items():
        cases[f"chat-{name}"] = (
            f"{HERE}:render_folder_template",
            [str(tokenizer_folder(d / f"chat-{name}", template))],
        )
    cases["chat-control"] = (f"{HERE}:render_folder_template", [str(tokenizer_folder(d / "chat-control", CONTROL))])
    fifo = tokenizer_folder(d / "chat-template-fifo", None)
    os.mkfifo(fifo / "chat_template.jinja")
    cases["chat-template-fifo"] = (f"{HERE}:render_folder_template", [str(fifo)])
    huge = tokenizer_folder(d / "chat-template-20mb", None)
    with open(huge / "chat_template.jinja", "wb") as f:
        f.truncate(20_000_000)  # sparse: 20 MB of NUL bytes
    cases["chat-template-20mb"] = (f"{HERE}:render_folder_template", [str(huge)])
    zero = tokenizer_folder(d / "chat-template-dev-zero", None)
    (zero / "chat_template.jinja").symlink_to("/dev/zero")
    cases["chat-template-dev-zero"] = (f"{HERE}:render_folder_template", [str(zero)])
    for kind in PATCH_CASES:
        cases[f"patch-{kind}"] = (f"{HERE}:patch_case", [kind])
    for name, question in {**QUESTIONS, **SOLVED}.items():
        lesson = _case_folder(d, f"lesson-{name}") / "lesson.toml"
        lesson.write_text(LESSON_HEAD + question + "\n", encoding="utf-8")
        function = "solve_lesson_case" if name in SOLVED else "read_lesson_case"
        cases[f"lesson-{name}"] = (f"{HERE}:{function}", [str(lesson)])
    fifo_lesson = _case_folder(d, "lesson-fifo") / "lesson.toml"
    os.mkfifo(fifo_lesson)
    cases["lesson-fifo"] = (f"{HERE}:read_lesson_case", [str(fifo_lesson)])
    cases.update(_export_cases(d))
    cases.update(_cli_chat_cases(d))
    return cases


CONTROL = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{{ '<|assistant|>' if add_generation_prompt }}"
)
PATCH_CASES = (
    "other-layer-count",
    "other-head-count",
    "other-length",
    "position-out-of-range",
    "position-negative",
    "head-out-of-range",
    "nan-values",
    "inf-values",
    "entry-missing",
    "entry-not-patchable",
    "entry-of-absent-layer",
    "integer-values",
    "same-config-other-weights",
    "map-of-cross-attention",
    "pair-other-lengths",
)


def _case_folder(d: Path, name: str) -> Path:
    """d / name: each case's files in a folder of its own name (the bench looks there for files left behind)."""
    path = d / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _export_cases(d: Path) -> dict[str, tuple[str, list[str]]]:
    out: dict[str, tuple[str, list[str]]] = {}

    def folder(name: str) -> Path:
        return _case_folder(d, f"export-{name}")

    for fmt in ("pdf", "gif"):
        existing = folder(f"{fmt}-onto-existing") / f"deck.{fmt}"
        existing.write_bytes(OLD)
        out[f"export-{fmt}-onto-existing"] = (f"{HERE}:export_case", [fmt, str(existing)])
        full = folder(f"{fmt}-full-disk") / f"deck.{fmt}"
        full.write_bytes(OLD)
        out[f"export-{fmt}-full-disk"] = (f"{HERE}:export_case", [fmt, str(full), "full-disk"])
        nospace = folder(f"{fmt}-enospc") / f"deck.{fmt}"
        nospace.write_bytes(OLD)
        out[f"export-{fmt}-enospc"] = (f"{HERE}:export_case", [fmt, str(nospace), "enospc"])
    fifo = folder("pdf-onto-fifo") / "deck.pdf"
    os.mkfifo(fifo)
    out["export-pdf-onto-fifo"] = (f"{HERE}:export_case", ["pdf", str(fifo)])
    directory = folder("gif-onto-folder") / "deck.gif"
    directory.mkdir()
    out["export-gif-onto-folder"] = (f"{HERE}:export_case", ["gif", str(directory)])
    afile = folder("pdf-parent-is-file") / "notes.txt"
    afile.write_text("a file, not a folder\n")
    out["export-pdf-parent-is-file"] = (f"{HERE}:export_case", ["pdf", str(afile / "deck.pdf")])
    missing = folder("pdf-missing-folder") / "no" / "such" / "deck.pdf"
    out["export-pdf-missing-folder"] = (f"{HERE}:export_case", ["pdf", str(missing)])
    if os.geteuid() == 0:  # root writes through chmod 500: a folder no process may create files in
        unwritable = Path("/proc/deck.pdf") if sys.platform.startswith("linux") else Path("/deck.pdf")
    else:
        locked = folder("pdf-unwritable-folder")
        locked.chmod(0o500)
        unwritable = locked / "deck.pdf"
    out["export-pdf-unwritable-folder"] = (f"{HERE}:export_case", ["pdf", str(unwritable)])
    long_name = folder("pdf-name-too-long") / ("n" * 250 + ".pdf")
    out["export-pdf-name-too-long"] = (f"{HERE}:export_case", ["pdf", str(long_name)])
    return out
