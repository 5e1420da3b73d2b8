"""The `attnlab` command. With no sub-command it opens the desktop app; sub-commands live in attnlab/commands/.

    attnlab [CHECKPOINT] [--src TEXT]      the app
    attnlab init|info|trace|train|eval|render …   see `attnlab COMMAND --help`
"""

from __future__ import annotations

import argparse
import importlib
import sys

from attnlab import __version__

# sub-command -> module in attnlab.commands with `add_arguments(parser)` and `run(args) -> int`
COMMANDS = {
    "init": "Write a randomly initialised model of chosen sizes to a .safetensors checkpoint.",
    "info": "Print what a checkpoint holds: architecture, sizes, tokenizer, parameters.",
    "trace": "Run a checkpoint on a sentence and save every intermediate tensor to an .npz file.",
    "train": "Train the bundled classroom models from a seed (reproducible).",
    "eval": "Report held-out accuracy (and alignment, perplexity) for a checkpoint.",
    "render": "Draw stages of a run to PNG/SVG files plus an index.html handout, without a display.",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        name = argv.pop(0)
        module = importlib.import_module(f"attnlab.commands.{name}")
        parser = argparse.ArgumentParser(prog=f"attnlab {name}", description=COMMANDS[name])
        module.add_arguments(parser)
        return int(module.run(parser.parse_args(argv)) or 0)
    module = importlib.import_module("attnlab.commands.app")
    parser = argparse.ArgumentParser(
        prog="attnlab",
        description="Step through every computation of a live Transformer.",
        epilog="sub-commands: " + "; ".join(f"{k}: {v}" for k, v in COMMANDS.items()),
    )
    parser.add_argument("--version", action="version", version=f"attnlab {__version__}")
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(argv)) or 0)


if __name__ == "__main__":
    sys.exit(main())
