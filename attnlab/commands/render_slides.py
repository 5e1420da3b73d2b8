"""`attnlab render LESSON --pdf deck.pdf` (one page per step at projector size, the note as text) and
`attnlab render [LESSON] --gif out.gif --sweep temperature|generation|training` (an animation of one stage).

    attnlab render resources/lessons/transformer-step-by-step.toml --pdf deck.pdf
    attnlab render lesson.toml --gif temperature.gif --sweep temperature
    attnlab render --src "the black cat sleeps" --gif diagonal.gif --sweep training

The GIF needs Pillow (`pip install "attnlab[render]"`); the PDF needs only Qt. The pages and frames are drawn by
attnlab/ui/window/slides.py with the app's own panels.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.commands.loading import import_settings, load_any

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace
    from attnlab.present.lessons import Lesson
    from attnlab.present.patch_request import PatchAsk
    from attnlab.present.stages import Stage
    from attnlab.ui.window.export import StageRenderer
    from attnlab.ui.window.slides import Slide

SWEEPS = ("temperature", "generation", "training")
TEMPERATURES = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
GENERATION_FRAMES = 8
PILLOW_HINT = 'writing a GIF needs Pillow: pip install "attnlab[render]" (or pip install pillow)'


class SlideError(ValueError):
    """Why the slides cannot be made; one line for the command's message."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lesson", nargs="?", help="a lesson .toml to render as slides (--pdf) or animate (--gif)")
    parser.add_argument("--pdf", metavar="FILE", help="write one page per lesson step at 1024 × 768 to FILE")
    parser.add_argument("--gif", metavar="FILE", help="write an animated GIF of one stage to FILE (needs Pillow)")
    parser.add_argument(
        "--sweep",
        choices=SWEEPS,
        default="temperature",
        help="what the GIF animates: the output temperature (0.25 … 3), a greedy generation token by token, or "
        "the training-step snapshots (default: temperature)",
    )
    parser.add_argument("--frames", type=int, default=GENERATION_FRAMES, help="tokens a generation GIF adds (1–64)")


@dataclass(frozen=True)
class Start:
    """What a GIF starts from: the model, its texts and options, and the stage key asked for ('' = default)."""

    runs: Runs
    src: str
    tgt: str | None
    options: RunOptions
    stage: str
    head: int = 0  # 0-based: the head attention stages show (--head)


def _renderer(model: LiveModel) -> StageRenderer:
    from attnlab.commands.drawing import start_qt
    from attnlab.ui.window.export import StageRenderer

    start_qt()
    return StageRenderer(vocabulary=model.output_tokenizer.id_to_token)


class Runs:
    """Runs of one model; a missing decoder input is the model's own translation minus a token, as the app
    starts (worked out once per source sentence: a lesson asks for it at most steps)."""

    def __init__(self, model: LiveModel) -> None:
        self.model = model
        self._prefixes: dict[str, str] = {}

    def prefix(self, src: str) -> str:
        from attnlab.present.texts import default_prefix

        if src not in self._prefixes:
            self._prefixes[src] = default_prefix(self.model, src)
        return self._prefixes[src]

    def trace(self, src: str, tgt: str | None, options: RunOptions, model: LiveModel | None = None) -> Trace:
        """A run of `model` (default: this one; a training snapshot keeps the trained model's decoder input)."""
        model = model or self.model
        problems = model.options_problems(options)
        if problems:
            raise SlideError("; ".join(problems))
        return model.trace(*model.prompt_sides(src, tgt if tgt is not None else self.prefix(src)), options)


def _patched(runs: Runs, ask: PatchAsk, src: str, tgt: str | None, options: RunOptions, where: str) -> Trace:
    """Run B (`src`, `tgt`, `options`) with the patch `ask` names, from its run A (SlideError in one line)."""
    from attnlab.engine.patching import PatchError
    from attnlab.present.patch_request import patched_runs

    tgt = tgt if tgt is not None else runs.prefix(src)
    try:
        return patched_runs(runs.model, src, tgt, options, (ask,))[2]
    except PatchError as e:
        raise SlideError(f"{where}: {e}") from None


def _stage(trace: Trace, key: str, where: str) -> Stage:
    from attnlab.present.stages import stages_for

    stages = stages_for(trace)
    found = next((s for s in stages if s.key == key), None)
    if found is None:
        raise SlideError(f"{where}: no stage called {key!r} in this run of the model")
    return found


# ---- PDF: one page per lesson step --------------------------------------------------------------------------
def _question_line(lesson: Lesson, index: int, trace: Trace, vocab: Callable[[int], str]) -> str:
    from attnlab.present.lesson_questions import QuestionError, choice_labels, question_text, solve

    q = lesson.steps[index].question
    if q is None:
        return ""
    try:
        choices = "   ".join(choice_labels(solve(q, trace, vocab)))
    except QuestionError as e:  # said on the slide, as the lesson player says it (ui/window/lesson_quiz.py)
        choices = f"This question cannot be asked on this run: {e}"
    return f"Question: {question_text(q)}" + (f"\n{choices}" if choices else "")


def lesson_slides(model: LiveModel, lesson: Lesson, renderer: StageRenderer) -> Iterator[Slide]:
    """The lesson's steps as slides, each run with the step's sentence, toggles, head and stage."""
    from attnlab.present.stages import ViewState
    from attnlab.ui.window.slides import Slide

    vocab = model.output_tokenizer.id_to_token
    runs = Runs(model)
    for i, step in enumerate(lesson.steps):
        src, tgt = lesson.text_of(i)
        trace = runs.trace(src, tgt, lesson.options(i))
        if step.patch is not None:  # issue 37: run A from its sentence, then this step's run patched from it
            trace = _patched(runs, step.patch, src, tgt, lesson.options(i), f"step {i + 1}")
        stage = _stage(trace, step.stage, f"step {i + 1}")
        panel = renderer.panel(trace, stage, ViewState(head=(step.head or 1) - 1))
        header = f"{lesson.title} · step {i + 1} of {len(lesson.steps)} · {stage.group} · {stage.title}"
        yield Slide(header, step.note, panel, _question_line(lesson, i, trace, vocab))


# ---- GIF: a sweep of one stage ------------------------------------------------------------------------------
def _default_stage(model: LiveModel, sweep: str) -> str:
    """out.probs for temperature; the last attention map that links the two texts (the last decoder layer's
    cross-attention, else the last layer's self-attention) for generation and training."""
    config = model.config
    if sweep == "temperature":
        return "out.probs"
    if config.has_decoder and config.has_encoder:
        return f"dec.{config.n_decoder_layers - 1}.cross.weights"
    stack, layers = ("dec", config.n_decoder_layers) if config.has_decoder else ("enc", config.n_encoder_layers)
    return f"{stack}.{layers - 1}.self.weights"


def _frame(renderer: StageRenderer, trace: Trace, start: Start, caption: str, where: str) -> Slide:
    from attnlab.present.stages import ViewState
    from attnlab.ui.window.slides import Slide

    stage = _stage(trace, start.stage, where)
    panel = renderer.panel(trace, stage, ViewState(head=start.head))
    fixed = getattr(panel, "fixed_axis", None)  # the output bars: one 0–1 axis, so a flatter curve looks flatter
    if fixed is not None and hasattr(fixed, "setChecked"):
        fixed.setChecked(True)
    return Slide(f"{stage.group} · {stage.title}", caption, panel)


def sweep_slides(start: Start, sweep: str, renderer: StageRenderer, frames: int) -> Iterator[Slide]:
    from dataclasses import replace

    if sweep == "temperature":
        for t in TEMPERATURES:
            trace = start.runs.trace(start.src, start.tgt, replace(start.options, temperature=t))
            yield _frame(renderer, trace, start, f"Output temperature T = {t:g}: softmax(logits / {t:g})", f"T = {t:g}")
    elif sweep == "generation":
        yield from _generation(start, renderer, frames)
    else:
        yield from _training(start, renderer)


def _generation(start: Start, renderer: StageRenderer, frames: int) -> Iterator[Slide]:
    from attnlab.present.texts import extended_ids, ids_text, next_token

    model = start.runs.model
    if not model.config.has_decoder:
        raise SlideError("--sweep generation needs a model with a decoder (this one only encodes)")
    src, tgt = start.src, start.tgt
    tok = model.tokenizer("tgt")
    trace = start.runs.trace(src, tgt if tgt is not None else "", start.options)
    for n in range(frames):
        token_id, piece = next_token(model, trace)
        yield _frame(renderer, trace, start, f"Generation, step {n + 1}: the model predicts “{piece}” next", "")
        if token_id == tok.specials.eos:
            return
        text = ids_text(tok, extended_ids(trace, token_id, tok.specials.n_added("decoder")))
        src, tgt = (text, None) if model.config.arch == "decoder-only" else (src, text)
        trace = start.runs.trace(src, tgt if tgt is not None else "", start.options)


def _training(start: Start, renderer: StageRenderer) -> Iterator[Slide]:
    from attnlab.checkpoints import CheckpointError
    from attnlab.checkpoints.snapshots import load_snapshots
    from attnlab.present.training_steps import step_label

    try:
        snaps = load_snapshots(start.runs.model)
    except CheckpointError as e:
        raise SlideError(f"--sweep training: {e}") from None
    for step in snaps.steps:
        trace = start.runs.trace(start.src, start.tgt, start.options, snaps.model_at(step))
        label = step_label(step, snaps.final_step, snaps.loss_at(step))
        yield _frame(renderer, trace, start, f"Training: {label}", f"step {step}")


# ---- the command --------------------------------------------------------------------------------------------
def _problem(args: argparse.Namespace) -> str:
    if args.pdf is None and args.gif is None:
        return "a lesson renders with --pdf deck.pdf (slides) or --gif out.gif (an animation)"
    if args.pdf is not None and args.lesson is None:
        return "--pdf needs a lesson file: attnlab render lesson.toml --pdf deck.pdf"
    if args.gif is not None and args.lesson is None and args.src is None:
        return "--gif needs a lesson file or --src TEXT"
    if not 1 <= args.frames <= 64:
        return f"--frames must be between 1 and 64 (got {args.frames})"
    if args.gif is not None:
        try:
            import PIL  # noqa: F401
        except ImportError:
            return PILLOW_HINT
    return ""


def _replacing(target: str) -> str:
    """' (it replaced the file there)' when `target` is a file already (written whole, then renamed over it)."""
    return " (it replaced the file there)" if Path(target).is_file() else ""


def run_slides(args: argparse.Namespace) -> int:
    """The --pdf / --gif side of `attnlab render`; bad input is one line on stderr and exit 2."""
    from attnlab.checkpoints import CheckpointError
    from attnlab.commands.drawing import counted_frames, fail
    from attnlab.engine.memory import RunTooBig
    from attnlab.engine.options import RunOptions
    from attnlab.present.lessons import LessonError, read_lesson
    from attnlab.ui.window.slides import SLIDE_SIZE, write_gif, write_pdf

    problem = _problem(args)
    if problem:
        return fail(problem)
    try:
        lesson = read_lesson(args.lesson) if args.lesson is not None else None
        model = load_any(lesson.model if lesson is not None else args.checkpoint, **import_settings(args))
        renderer = _renderer(model)
        if lesson is not None and args.pdf is not None:
            replacing = _replacing(args.pdf)
            path, pages = write_pdf(args.pdf, lesson_slides(model, lesson, renderer), lesson.title)
            print(f"Wrote {pages} pages to {path}{replacing}.")
        if args.gif is not None:
            if lesson is not None:
                src, tgt = lesson.text_of(0)
                options = lesson.options(0)
            else:
                src, tgt, options = args.src, args.tgt, RunOptions()
            stage = next((k for item in args.stage or () for k in item.split(",") if k.strip()), "")
            stage = stage.strip() or _default_stage(model, args.sweep)
            start = Start(Runs(model), src, tgt, options, stage, max(0, args.head - 1))
            expected = {"temperature": len(TEMPERATURES), "generation": args.frames}.get(args.sweep)  # training: steps
            replacing = _replacing(args.gif)
            slides = sweep_slides(start, args.sweep, renderer, args.frames)
            path, frames = write_gif(args.gif, counted_frames(slides, math.prod(SLIDE_SIZE), expected))
            print(f"Wrote {frames} frames ({args.sweep}) to {path}{replacing}.")
    except (LessonError, CheckpointError, SlideError) as e:
        return fail(str(e))
    except RunTooBig as e:  # counted before the first frame (or the next) is drawn: nothing written
        return fail(f"{e}; nothing was written.")
    except OSError as e:
        return fail(f"cannot write the file: {e.strerror or e}" if isinstance(e, PermissionError) else str(e))
    return 0
