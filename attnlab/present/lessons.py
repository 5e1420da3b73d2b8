"""Lessons: a model, a sentence, toggles and an ordered list of stages with a note for each, in a small TOML
file (format: docs/lessons.md). Qt-free: reading, checking, writing. A bad file gets one clear message.

    title = "The Transformer step by step"
    model = "bundled:translation"
    src = "the dog bites the man"

    [[step]]
    stage = "src.tokens"
    note = "The sentence is cut into tokens."

    [[step]]
    stage = "enc.0.self.weights"
    note = "Without positions, word order is invisible."
    toggles = { positional = false }
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlab.bounded_read import FileRefused, loads_toml, read_text, regular_file_size
from attnlab.engine import option_rules
from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions
from attnlab.limits import excerpt
from attnlab.present.lesson_questions import Question, QuestionError, parse_question
from attnlab.present.patch_request import PatchAsk, model_problem, parse_table

MAX_BYTES = 256 * 1024
MAX_STEPS = 200
MAX_NOTE = 4000
MAX_TEXT = 2000
SUFFIX = ".toml"

# The toggles a lesson may set are the option table's lesson keys (engine/option_specs.py): their TOML types,
# what values they refuse and how they set RunOptions come from there.
LESSON_KEYS = {"title", "model", "src", "tgt", "toggles", "step", "description"}
STEP_KEYS = {"stage", "note", "toggles", "head", "src", "tgt", "question", "fixed_axis", "patch"}


class LessonError(ValueError):
    """A lesson file that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Step:
    stage: str  # a stage key, e.g. "enc.0.self.weights"
    note: str = ""
    toggles: Mapping[str, Any] = field(default_factory=dict)  # on top of the lesson's toggles
    head: int | None = None  # 1-based head to select, if any
    src: str | None = None  # a sentence for this step (else the lesson's)
    tgt: str | None = None
    question: Question | None = None  # asked before the stage shows its answer (present/lesson_questions.py)
    fixed_axis: bool | None = None  # the output's probability axis fixed at 0–1 (None: as the person left it)
    patch: PatchAsk | None = None  # run A's value patched into this step's run (issue 37, present/patch_request.py)


@dataclass(frozen=True)
class Lesson:
    title: str
    model: str  # "bundled:translation", or a checkpoint path (relative paths are relative to the lesson file)
    src: str
    steps: tuple[Step, ...]
    tgt: str | None = None
    toggles: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def options(self, index: int, base: RunOptions | None = None) -> RunOptions:
        """The run options of step `index`: the defaults, then the lesson's toggles, then the step's."""
        return options_with(options_with(base or RunOptions(), self.toggles), self.steps[index].toggles)

    def text_of(self, index: int) -> tuple[str, str | None]:
        """(source sentence, decoder input) of step `index`."""
        step = self.steps[index]
        return (step.src if step.src is not None else self.src), (step.tgt if step.tgt is not None else self.tgt)


def options_with(options: RunOptions, toggles: Mapping[str, Any]) -> RunOptions:
    """`options` with the lesson toggles applied (already checked by `_toggles`)."""
    keys = option_rules.lesson_keys()
    for key, value in toggles.items():
        spec, lesson_key = keys[key]
        options = spec.applied(lesson_key, options, value)
    return options


def toggles_of(options: RunOptions) -> dict[str, Any]:
    """The lesson toggles that differ from the defaults (what Save lesson… writes)."""
    default, found = RunOptions(), {}
    for key, (spec, lesson_key) in option_rules.lesson_keys().items():
        if getattr(options, spec.field) != getattr(default, spec.field):
            found[key] = lesson_key.saved(getattr(options, spec.field))
    return found


# ---- reading ------------------------------------------------------------------------------------------------
def _type_name(types: tuple[type, ...]) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string", dict: "a table"}[types[0]]


def _required(table: Mapping[str, Any], key: str, where: str) -> str:
    """A string the lesson must have (LessonError naming it when it is missing)."""
    value = _string(table, key, where, required=True)
    assert value is not None  # _string raised otherwise
    return value


def _string(
    table: Mapping[str, Any], key: str, where: str, required: bool = False, limit: int = MAX_TEXT
) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise LessonError(f"{where}: '{key}' is missing")
        return None
    if not isinstance(value, str):
        raise LessonError(f"{where}: '{key}' must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise LessonError(f"{where}: '{key}' is {len(value)} characters long; at most {limit}")
    return value


def _unknown_keys(table: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    extra = sorted(set(table) - set(allowed))
    if extra:
        raise LessonError(
            f"{where}: unknown key {', '.join(map(repr, extra))}; known keys: " + ", ".join(sorted(allowed))
        )


def _toggles(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LessonError(f"{where}: 'toggles' must be a table like {{ positional = false }}")
    keys = option_rules.lesson_keys()
    _unknown_keys(value, keys, f"{where} toggles")
    for key, item in value.items():
        types = keys[key][1].types
        if not isinstance(item, types) or (bool not in types and isinstance(item, bool)):
            raise LessonError(f"{where}: toggle '{key}' must be {_type_name(types)}, not {excerpt(item)}")
    for key, item in value.items():
        problem = keys[key][1].problem(item)
        if problem:
            raise LessonError(f"{where}: {problem}")
    return dict(value)


def _step(table: Any, number: int) -> Step:
    where = f"step {number}"
    if not isinstance(table, dict):
        raise LessonError(f"{where}: each [[step]] must be a table")
    _unknown_keys(table, STEP_KEYS, where)
    stage = _required(table, "stage", where)
    head = table.get("head")
    if head is not None and (isinstance(head, bool) or not isinstance(head, int) or head < 1):
        raise LessonError(f"{where}: 'head' counts from 1 and must be a whole number, not {excerpt(head)}")
    try:
        question = parse_question(table.get("question"))
    except QuestionError as e:
        raise LessonError(f"{where}: {e}") from None
    fixed_axis = table.get("fixed_axis")
    if fixed_axis is not None and not isinstance(fixed_axis, bool):
        raise LessonError(f"{where}: 'fixed_axis' must be true or false, not {excerpt(fixed_axis)}")
    try:
        patch = None if table.get("patch") is None else parse_table(table["patch"])
    except ValueError as e:
        raise LessonError(f"{where}: {e}") from None
    return Step(
        stage=stage,
        note=_string(table, "note", where, limit=MAX_NOTE) or "",
        toggles=_toggles(table.get("toggles"), where),
        head=head,
        src=_string(table, "src", where),
        tgt=_string(table, "tgt", where),
        question=question,
        fixed_axis=fixed_axis,
        patch=patch,
    )


def parse_lesson(text: str, origin: str = "lesson") -> Lesson:
    """A Lesson from TOML text; LessonError says what is wrong and where."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise LessonError(f"{origin}: a lesson file may be at most {MAX_BYTES // 1024} KB")
    try:
        data = loads_toml(text, origin)  # nesting bounded: no RecursionError from a deep inline array
    except FileRefused as e:
        raise LessonError(str(e).replace(f"{origin} is not valid", f"{origin}: not valid", 1)) from None
    _unknown_keys(data, LESSON_KEYS, origin)
    steps = data.get("step")
    if not isinstance(steps, list) or not steps:
        raise LessonError(f"{origin}: a lesson needs at least one [[step]] with a stage")
    if len(steps) > MAX_STEPS:
        raise LessonError(f"{origin}: {len(steps)} steps; a lesson may have at most {MAX_STEPS}")
    return Lesson(
        title=_string(data, "title", origin) or "Untitled lesson",
        model=_string(data, "model", origin) or "bundled:translation",
        src=_required(data, "src", origin),
        tgt=_string(data, "tgt", origin),
        toggles=_toggles(data.get("toggles"), origin),
        description=_string(data, "description", origin, limit=MAX_NOTE) or "",
        steps=tuple(_step(s, i) for i, s in enumerate(steps, 1)),
    )


def read_lesson(path: str | Path) -> Lesson:
    path = Path(path)
    try:  # a regular file only (a FIFO is refused without being opened), its size checked from stat first
        regular_file_size(path, "the lesson", MAX_BYTES)
    except FileRefused as e:
        if "bytes; attnlab reads at most" in str(e):
            raise LessonError(f"{path}: a lesson file may be at most {MAX_BYTES // 1024} KB") from None
        raise LessonError(str(e)) from None
    try:
        text = read_text(path, "the lesson", MAX_BYTES)
    except FileRefused as e:
        raise LessonError(str(e)) from None
    lesson = parse_lesson(text, path.name)
    if not lesson.model.startswith("bundled:") and not Path(lesson.model).is_absolute():
        lesson = Lesson(**{**lesson.__dict__, "model": str(path.parent / lesson.model)})
    return lesson


def bundled_lessons() -> list[Path]:
    """The lessons shipped with attnlab (resources/lessons/*.toml), sorted by file name."""
    from importlib import resources

    folder = Path(str(resources.files("attnlab.resources").joinpath("lessons")))
    return sorted(folder.glob(f"*{SUFFIX}"))


def stage_problems(lesson: Lesson, stage_keys: Iterable[str]) -> list[str]:
    """Steps whose stage is not in a run of the lesson's model (checked once the model has run)."""
    keys = set(stage_keys)
    return [
        f"step {i}: no stage called {s.stage!r} in this model"
        for i, s in enumerate(lesson.steps, 1)
        if s.stage not in keys
    ]


def patch_problems(lesson: Lesson, config: ModelConfig) -> list[str]:
    """Steps whose patch names a layer, a stack or a cross-attention the model lacks (known once it is open;
    a position past the sentence's end is refused when the step runs)."""
    found = [(i, model_problem(s.patch, config)) for i, s in enumerate(lesson.steps, 1) if s.patch is not None]
    return [f"step {i}: {problem}" for i, problem in found if problem]


# ---- writing ------------------------------------------------------------------------------------------------
def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else json.dumps(key)


def lesson_toml(lesson: Lesson) -> str:
    """The lesson as TOML text that parse_lesson reads back to an equal Lesson."""
    lines = [f"title = {_value(lesson.title)}", f"model = {_value(lesson.model)}", f"src = {_value(lesson.src)}"]
    if lesson.tgt is not None:
        lines.append(f"tgt = {_value(lesson.tgt)}")
    if lesson.description:
        lines.append(f"description = {_value(lesson.description)}")
    if lesson.toggles:
        lines.append(f"toggles = {_value(dict(lesson.toggles))}")
    for step in lesson.steps:
        lines += ["", "[[step]]", f"stage = {_value(step.stage)}"]
        for key in ("head", "src", "tgt", "fixed_axis"):
            if getattr(step, key) is not None:
                lines.append(f"{key} = {_value(getattr(step, key))}")
        if step.toggles:
            lines.append(f"toggles = {_value(dict(step.toggles))}")
        if step.patch is not None:
            lines.append(f"patch = {_value(step.patch.table())}")
        if step.question is not None:
            lines.append(f"question = {_value(step.question.table())}")
        lines.append(f"note = {_value(step.note)}")
    return "\n".join(lines) + "\n"
