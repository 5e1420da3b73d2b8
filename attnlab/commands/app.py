"""`attnlab [CHECKPOINT | --checkpoint PATH] [--src TEXT] [--tgt TEXT] [--stage KEY] [--present] [--view model]
[--compare]`: the desktop app.

The window paints first; the model loads and the first sentence is traced on a worker thread meanwhile. A
`--stage` name is checked against the model's config before anything loads (checkpoints/config_only.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from attnlab.commands.loading import add_import_arguments, import_settings
from attnlab.commands.refusal import refuse

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace
    from attnlab.present.lessons import Lesson
    from attnlab.ui.window.main_window import MainWindow

START = time.perf_counter()
BUNDLED_NAMES = ("translation", "language")


def seconds_since_start() -> float:
    """Seconds since this process started (Linux: from /proc; elsewhere: since this module loaded)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: start time in clock ticks
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - START


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "checkpoint",
        nargs="?",
        metavar="CHECKPOINT",
        help="a .safetensors (or .pt/.pth) checkpoint, a .gguf file, a Hugging Face model folder, a model in the "
        "Hugging Face "
        "cache by id (org/name or org/name@revision; `attnlab models` lists them) or a nanoGPT ckpt.pt to open, "
        "or a lesson .toml to play in presentation mode; default: the bundled model",
    )
    parser.add_argument(
        "--checkpoint",
        dest="checkpoint_option",
        metavar="PATH",
        help="the same as CHECKPOINT (the spelling the sub-commands take); also bundled:NAME",
    )
    parser.add_argument("--src", metavar="TEXT", help="start on this sentence (the prompt for a decoder-only model)")
    parser.add_argument(
        "--tgt",
        metavar="TEXT",
        help="start with this decoder input (teacher forcing); default: the model's own "
        "greedy translation minus its last token",
    )
    parser.add_argument(
        "--stage",
        metavar="KEY",
        help="start on this stage, e.g. src.tokens, enc.0.self.weights, dec.1.norm3, out.probs",
    )
    parser.add_argument(
        "--bundled",
        choices=BUNDLED_NAMES,
        default="translation",
        help="which bundled model opens when no CHECKPOINT is given (default: translation)",
    )
    parser.add_argument(
        "--present",
        action="store_true",
        help="start in presentation mode (F5: full screen, docks folded, large text; Esc leaves)",
    )
    parser.add_argument(
        "--view",
        choices=("model",),
        help="also open a view: 'model' is the whole-model attention view (View → Whole-model attention)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="pin the first run as A (Pin as A), so every change after it is compared with it (A | B | B − A)",
    )
    parser.add_argument("--dark", action="store_true", default=None, help="use the dark theme")
    parser.add_argument("--light", dest="dark", action="store_false", help="use the light theme")
    parser.add_argument(
        "--startup-time",
        action="store_true",
        help="print the seconds to the first paint and to the first trace on stderr",
    )
    parser.add_argument(
        "--quit-after-trace",
        action="store_true",
        help="exit 0 once the first trace is painted, printing the seconds it took on stderr "
        "(a smoke test for installs and bundles)",
    )
    add_import_arguments(parser)


def _read_lesson(path: str) -> Lesson:
    """The lesson a .toml CHECKPOINT names; LessonError says what is wrong with it."""
    from attnlab.present.lessons import read_lesson

    return read_lesson(path)


BOTH_CHECKPOINTS = "give the checkpoint once: as CHECKPOINT or as --checkpoint, not both"


def checkpoint_problem(args: argparse.Namespace) -> str:
    """`--checkpoint PATH` means CHECKPOINT (bundled:NAME means --bundled NAME): moved there, or the one-line
    error when both are given ('' when all is well)."""
    option = getattr(args, "checkpoint_option", None)
    if option is None:
        return ""
    if args.checkpoint:
        return BOTH_CHECKPOINTS
    if option.startswith("bundled:"):
        name = option.split(":", 1)[1] or "translation"
        if name not in BUNDLED_NAMES:
            return f"unknown bundled model {name[:40]!r}; the bundled models are: {', '.join(BUNDLED_NAMES)}"
        args.bundled = name
    else:
        args.checkpoint = option
    args.checkpoint_option = None
    return ""


def run(args: argparse.Namespace) -> int:
    from attnlab.present.lessons import SUFFIX, LessonError

    problem = checkpoint_problem(args)
    if problem:
        return refuse("attnlab", f"error: {problem}")
    lesson = None
    if args.checkpoint and args.checkpoint.lower().endswith(SUFFIX):
        try:
            lesson = _read_lesson(args.checkpoint)
        except LessonError as e:
            return refuse("attnlab", e)
    problem = (early_stage_problem(args) if lesson is None else "") or display_problem()
    if problem:
        return refuse("attnlab", f"error: {problem}")
    from PySide6.QtCore import QEvent, QObject

    from attnlab.limits import MAX_SENTENCE_CHARS
    from attnlab.ui.window import app as appsettings
    from attnlab.ui.window.main_window import MainWindow

    app = appsettings.create_app(sys.argv[:1])
    settings = appsettings.make_settings()
    dark = args.dark if args.dark is not None else appsettings.read_bool(settings, appsettings.DARK)
    appsettings.apply_theme(dark)
    window = MainWindow(settings=settings)
    window.dark_action.setChecked(dark)
    window.errors.install()

    if args.startup_time:

        class FirstPaint(QObject):
            def eventFilter(self, obj: QObject, event: QEvent) -> bool:
                if event.type() == QEvent.Type.Paint:
                    print(f"first paint after {seconds_since_start():.2f} s", file=sys.stderr)
                    window.removeEventFilter(self)
                return False

        first_paint = FirstPaint(window)
        window.installEventFilter(first_paint)
        window.session.traceReady.connect(
            lambda _t: print(f"trace ready after {seconds_since_start():.2f} s", file=sys.stderr)
        )

    window.show()
    if args.present:
        window.set_presenting(True)
    if args.view == "model":
        window.model_view_dock.show()
    src = args.src
    last = str(settings.value(appsettings.LAST_SENTENCE) or "")[:MAX_SENTENCE_CHARS] or None  # a hand-edited file
    remembered = (str(settings.value(appsettings.LAST_SENTENCE_MODEL) or ""), str(last)) if last else None
    if lesson is not None:
        from attnlab.ui.window.lesson_actions import model_loader, play_when_loaded

        path = None if lesson.model.startswith("bundled:") else lesson.model
        loader = model_loader(lesson.model)
        src, tgt = lesson.text_of(0)
        args.tgt, args.stage = tgt if tgt is not None else args.tgt, lesson.steps[0].stage
        play_when_loaded(window, lesson)
    elif args.checkpoint:
        checkpoint: str = args.checkpoint
        path, flags = checkpoint, import_settings(args)

        def loader() -> LiveModel:
            from attnlab.checkpoints import load_checkpoint

            return load_checkpoint(checkpoint, **flags)
    else:
        path, name = None, args.bundled

        def loader() -> LiveModel:
            from attnlab.checkpoints import load_bundled

            return load_bundled(name)

    window.start(loader, src=src, tgt=args.tgt, stage=args.stage, path=path, remembered=remembered)
    if not args.quit_after_trace:  # a smoke test says why it failed and exits; the window falls back
        _fall_back_once(window, bundled_tried=lesson is None and not args.checkpoint)
    if args.stage:
        _check_stage_on_first_trace(app, window, args.stage)
    if args.compare:
        _pin_first_trace(window)
    if args.quit_after_trace:
        _quit_after_first_trace(app, window)
    return app.exec()


NO_DISPLAY = "no display: set DISPLAY, or use QT_QPA_PLATFORM=offscreen for `attnlab render`"


def display_problem(environ: Mapping[str, str] | None = None) -> str:
    """Why the window cannot open here ('' when it can): on Linux and the BSDs Qt needs an X or Wayland
    display, or a platform named in QT_QPA_PLATFORM; without one it aborts the process (exit 134)."""
    environ = os.environ if environ is None else environ
    if sys.platform in ("darwin", "win32") or sys.platform.startswith("cygwin"):
        return ""
    wanted = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    return "" if any(environ.get(name) for name in wanted) else NO_DISPLAY


def early_stage_problem(args: argparse.Namespace) -> str:
    """`--stage` checked against the stage names of the model's architecture, read from its config without
    the weights: '' when it is one of them (or when the config cannot be told before loading: then the
    first trace checks it), else the one-line error."""
    if not args.stage:
        return ""
    from attnlab.checkpoints.config_only import bundled_config, config_without_weights
    from attnlab.present.stages import stage_keys_for_config

    config = config_without_weights(args.checkpoint) if args.checkpoint else bundled_config(args.bundled)
    if config is None:
        return ""
    keys = stage_keys_for_config(config)
    return "" if args.stage in keys else unknown_stage(args.stage, keys)


def unknown_stage(key: str, keys: list[str]) -> str:
    return f"unknown stage {key[:80]!r}; this model's stages are: {', '.join(keys)}"


def _pin_first_trace(window: MainWindow) -> None:
    """`--compare`: the first run becomes A (Compare / Pin as A); every later run is B."""

    def pin(_trace: Trace) -> None:
        window.session.traceReady.disconnect(pin)
        window.session.pin()

    window.session.traceReady.connect(pin)


def _check_stage_on_first_trace(app: QApplication, window: MainWindow, key: str) -> None:
    """`--stage KEY` names a stage of the model's first run, or the app exits 2 listing the names it has (the
    names exist only once the model has run: they follow its layers, its cross-attention and its options)."""
    from attnlab.present.stages import stages_for

    def check(trace: Trace) -> None:
        window.session.traceReady.disconnect(check)
        keys = [stage.key for stage in stages_for(trace)]
        if key not in keys:
            app.exit(refuse("attnlab", f"error: {unknown_stage(key, keys)}"))

    window.session.traceReady.connect(check)


def _quit_after_first_trace(app: QApplication, window: MainWindow) -> None:
    """Paint the first trace, say how long it took and which model it came from, then leave the event loop; a
    model that cannot be opened or a first run that is refused ends it too, with exit 2 and one line on stderr
    (no dialog waits for a click: a smoke test runs unattended)."""
    from PySide6.QtCore import QTimer

    def painted(_trace: Trace) -> None:
        window.repaint()  # synchronous: the panels are drawn before the time is read
        model = window.session.model_path or "bundled model"
        print(f"first trace painted after {seconds_since_start():.2f} s ({model})", file=sys.stderr)
        app.exit(0)

    def refused(what: str, message: str) -> None:
        if window.session.trace is None:  # only before the first trace: later failures are the user's to see
            app.exit(refuse("attnlab", f"{what}: {message}"))

    window.session.modelFailed.disconnect(window._on_model_failed)  # its dialog would wait for a click
    window.session.modelFailed.connect(lambda message: refused("could not open the model", message))
    window.session.failed.connect(lambda message: refused("the first trace was refused", message))
    window.session.traceReady.connect(lambda trace: QTimer.singleShot(0, lambda: painted(trace)))


def _fall_back_once(window: MainWindow, bundled_tried: bool) -> None:
    """A model named on the command line that cannot be opened (the dialog said why) is replaced by the bundled
    one, once. When the bundled model cannot be opened either (a memory limit, a broken install), nothing is
    tried again: the window stays empty and usable (File → Open…) and says so on its panel and status bar."""
    tried = [bundled_tried]  # whether the bundled model has been tried

    def failed(_message: str) -> None:
        if window.session.model is not None:
            return
        if not tried[0]:
            tried[0] = True
            _fallback(window)
            return
        window.session.modelFailed.disconnect(failed)
        window.placeholder.setText(NO_MODEL)
        window.stage_title.setText("No model is open")
        window.statusBar().showMessage(NO_MODEL)

    window.session.modelFailed.connect(failed)


NO_MODEL = "No model could be opened: File → Open… opens a checkpoint, a Hugging Face folder or a model id."


def _fallback(window: MainWindow) -> None:
    """The checkpoint named on the command line could not be opened (the dialog said why): open the
    bundled model so the window is not empty."""
    from attnlab.checkpoints import load_bundled

    window.placeholder.setText("Opening the bundled model instead…")
    window.session.load_async(lambda: load_bundled("translation"), prefix=True)
