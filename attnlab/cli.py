"""The `attnlab` command. With no sub-command it opens the desktop app; sub-commands live in attnlab/commands/.

attnlab [CHECKPOINT] [--src TEXT] [--present] [--view model] [--compare]     the app
attnlab init|info|trace|train|eval|render|translate|generate|models|get …   see `attnlab COMMAND --help`
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from attnlab import __version__
from attnlab.commands.refusal import one_line

# sub-command -> module in attnlab.commands with `add_arguments(parser)` and `run(args) -> int`
COMMANDS = {
    "init": "Write a randomly initialised model of chosen sizes to a .safetensors checkpoint.",
    "info": "Print what a checkpoint holds: architecture, sizes, tokenizer, parameters.",
    "trace": "Run a checkpoint on a sentence and save every intermediate tensor to an .npz file.",
    "train": "Train the bundled classroom models from a seed (reproducible).",
    "eval": "Report held-out accuracy (and alignment, perplexity) for a checkpoint.",
    "render": "Draw stages of a run to PNG/SVG files plus an index.html handout, a lesson to PDF slides, or a sweep "
    "to an animated GIF, without a display.",
    "translate": "Print the greedy translation of a sentence (the bundled translation model or --checkpoint).",
    "generate": "Print the greedy continuation of a text by a decoder-only model (default: the bundled one).",
    "models": "List the models in the Hugging Face cache on this computer and whether each opens.",
    "get": "Download a model from the Hugging Face Hub into its cache (config, tokenizer, safetensors; never code).",
}


def main(argv: list[str] | None = None) -> int:
    """Run one command. Bad input of any kind (a refused checkpoint, impossible options, a file that cannot be
    written, a closed or full stdout) is one line on stderr and exit status 2; an unexpected error is a short
    message and exit 1, with the traceback only when ATTNLAB_DEBUG=1."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv and argv[0] in COMMANDS else ""
    prog = f"attnlab {name}".strip()
    try:
        code = dispatch(argv)
        sys.stdout.flush()  # a full or closed stdout fails here, inside the handler, not at exit
        return code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:  # attnlab's own errors are ValueErrors; files and pipes OSErrors
        if os.environ.get("ATTNLAB_DEBUG") == "1":
            raise
        if isinstance(e, OSError) and _is_stdout_failure(e):
            _silence_stdout()
            message = f"cannot write the output ({e.strerror or e})"
        else:
            message = one_line(e)
        print(f"{prog}: {message}", file=sys.stderr)
        return 2
    except Exception as e:
        if os.environ.get("ATTNLAB_DEBUG") == "1":
            raise
        print(
            f"{prog}: unexpected error ({type(e).__name__}: {one_line(e, 300)}); run again with ATTNLAB_DEBUG=1 "
            "to see the traceback",
            file=sys.stderr,
        )
        return 1


def dispatch(argv: list[str]) -> int:
    if argv and argv[0] in COMMANDS:
        name = argv.pop(0)
        module = importlib.import_module(f"attnlab.commands.{name}")
        parser = argparse.ArgumentParser(prog=f"attnlab {name}", description=COMMANDS[name])
        module.add_arguments(parser)
        args = parser.parse_args(argv)  # --help works whatever the environment holds
        refuse_malformed_settings()
        return int(module.run(args) or 0)
    module = importlib.import_module("attnlab.commands.app")
    parser = argparse.ArgumentParser(
        prog="attnlab",
        description="Step through every computation of a live Transformer.",
        epilog="sub-commands: " + "; ".join(f"{k}: {v}" for k, v in COMMANDS.items()),
    )
    parser.add_argument("--version", action="version", version=f"attnlab {__version__}")
    module.add_arguments(parser)
    args = parser.parse_args(argv)
    refuse_malformed_settings()
    return int(module.run(args) or 0)


def refuse_malformed_settings() -> None:
    """Every ATTNLAB_* environment value readable, or one SettingError (a ValueError: one line, exit 2) naming
    them, before anything is loaded (attnlab/env_settings.py)."""
    from attnlab.env_settings import SettingError, setting_problems

    problems = setting_problems()
    if problems:
        raise SettingError("; ".join(problems))


def _is_stdout_failure(error: OSError) -> bool:
    return (
        isinstance(error, BrokenPipeError)
        or error.errno in (errno.ENOSPC, errno.EPIPE, errno.EIO)
        and not getattr(error, "filename", None)
    )


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
