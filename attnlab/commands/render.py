"""`attnlab render`: draw stages of a run to PNG/SVG files, headless, plus an index.html handout that lists
them in order with their titles and explanations.

    attnlab render --checkpoint bundled:translation --src "the dog bites the man" --stage all --out handout/
    attnlab render --src "…" --stage enc.0.self.weights --stage out.probs --out slides/ --format png,svg --scale 2
    attnlab render lesson.toml --pdf deck.pdf                       # one page per step (render_slides.py)
    attnlab render lesson.toml --gif t.gif --sweep temperature      # or generation, training (needs Pillow)

No display is needed: with neither DISPLAY nor WAYLAND_DISPLAY set, Qt draws off screen.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.commands.drawing import fail, start_qt
from attnlab.commands.loading import add_import_arguments, import_settings, load_any
from attnlab.commands.render_slides import add_arguments as add_slide_arguments
from attnlab.commands.render_slides import run_slides

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace
    from attnlab.present.stages import Stage

MAX_SCALE = 4.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        default="bundled:translation",
        help="a checkpoint file or folder, a model in the Hugging Face cache (org/name[@revision]), or bundled:NAME "
        "(default: bundled:translation)",
    )
    parser.add_argument("--src", help="source sentence (a decoder-only model's prompt); required without a lesson")
    parser.add_argument(
        "--tgt", default=None, help="decoder input (default: the model's own greedy translation minus its last token)"
    )
    parser.add_argument(
        "--stage",
        action="append",
        metavar="NAME",
        help="a stage key such as enc.0.self.weights or out.probs, or 'all'; repeat it or separate keys by commas "
        "(required for pictures; with --gif the stage animated, default out.probs or the last cross-attention)",
    )
    parser.add_argument("--out", metavar="DIR", help="folder for the files and index.html (pictures)")
    parser.add_argument("--format", default="png", help="png, svg or png,svg (default: png)")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help=f"PNG pixels per screen pixel, 1 to {MAX_SCALE:g} (2 or 3 for slides; default 1)",
    )
    parser.add_argument("--head", type=int, default=1, help="which head attention stages show (1-based)")
    add_import_arguments(parser)
    add_slide_arguments(parser)


def _formats(text: str) -> list[str] | None:
    from attnlab.ui.window.export import FORMATS

    chosen = [f.strip().lower() for f in text.split(",") if f.strip()]
    return chosen if chosen and all(f in FORMATS for f in chosen) else None


def _wanted_stages(requested: list[str], stages: Sequence[Stage]) -> tuple[list[Stage], list[str]]:
    """(the stages asked for, in the order asked; the names that are not stages of this run)."""
    keys = [k.strip() for item in requested for k in item.split(",") if k.strip()]
    if "all" in keys:
        return list(stages), []
    by_key = {s.key: s for s in stages}
    return [by_key[k] for k in keys if k in by_key], [k for k in keys if k not in by_key]


def _check(args: argparse.Namespace, formats: list[str] | None) -> str:
    missing = [flag for flag, value in (("--src", args.src), ("--stage", args.stage), ("--out", args.out)) if not value]
    if missing:
        return f"pictures need {', '.join(missing)} (or give a lesson file with --pdf or --gif)"
    if formats is None:
        return f"--format takes png, svg or png,svg (got {args.format!r})."
    if not 1.0 <= args.scale <= MAX_SCALE:
        return f"--scale must be between 1 and {MAX_SCALE:g} (got {args.scale:g})."
    if args.head < 1:
        return f"--head counts from 1 (got {args.head})."
    return ""


def run(args: argparse.Namespace) -> int:
    from attnlab.checkpoints import CheckpointError
    from attnlab.engine.memory import RunTooBig
    from attnlab.present.export import check_picture
    from attnlab.ui.window.export import RENDER_SIZE

    if args.lesson is not None or args.pdf is not None or args.gif is not None:
        return run_slides(args)
    formats = _formats(args.format)
    problem = _check(args, formats)
    if problem or formats is None:  # _check names a None format list
        return fail(problem)
    try:
        model = load_any(args.checkpoint, **import_settings(args))
    except CheckpointError as e:
        return fail(str(e))
    from attnlab.present.stages import stages_for
    from attnlab.present.texts import default_prefix

    tgt = args.tgt if args.tgt is not None else default_prefix(model, args.src)
    try:
        trace = model.trace(*model.prompt_sides(args.src, tgt))
    except (ValueError, RuntimeError) as e:
        return fail(str(e))
    stages, unknown = _wanted_stages(args.stage, stages_for(trace))
    if unknown:
        return fail(
            f"no stage called {', '.join(map(repr, unknown))} in this run. Valid names: all, "
            + ", ".join(s.key for s in stages_for(trace))
        )
    if args.head > trace.n_heads:
        return fail(f"--head {args.head}: this run has {trace.n_heads} heads.")
    try:
        check_picture(*RENDER_SIZE, args.scale if "png" in formats else 1.0)  # before the first is drawn
    except RunTooBig as e:
        return fail(f"{e}; nothing was written.")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return fail(f"cannot create the folder {str(out)!r}: {e.strerror or e}.")
    try:
        written = render_stages(model, trace, stages, out, formats, args.scale, args.head - 1)
    except OSError as e:
        return fail(str(e))
    print(f"Wrote {written} files and index.html to {out}.")
    return 0


def render_stages(
    model: LiveModel, trace: Trace, stages: Sequence[Stage], out: Path, formats: list[str], scale: float, head: int
) -> int:
    """Draw every stage in every format into `out` and write index.html; returns how many pictures."""
    start_qt()
    from attnlab.present.explain import explanation_html
    from attnlab.present.export import HandoutEntry, handout_html, safe_file_stem, write_text
    from attnlab.present.stages import ViewState
    from attnlab.ui.window.export import StageRenderer

    tok = model.tgt_tokenizer if model.config.has_decoder else model.src_tokenizer
    renderer = StageRenderer(vocabulary=tok.id_to_token if tok is not None else None)
    view = ViewState(head=head)
    entries, count = [], 0
    for number, stage in enumerate(stages, 1):
        files = []
        for fmt in formats:
            name = f"{number:03d}-{safe_file_stem(stage.key)}.{fmt}"
            renderer.render(trace, stage, view, out / name, scale)
            files.append(name)
            count += 1
        entries.append(HandoutEntry(f"{stage.group} · {stage.title}", explanation_html(stage, trace), files))
    sides = [
        f"{label}: {' '.join(trace[f'{side}.tokens'])}"
        for side, label in (("src", "Source tokens"), ("tgt", "Decoder input tokens"))
        if f"{side}.tokens" in trace
    ]
    write_text(out / "index.html", handout_html(f"attnlab — {model.name}", " · ".join(sides), entries))
    return count
