"""`attnlab models`: the models in the Hugging Face cache on this computer (huggingface_hub's scan of
HF_HUB_CACHE), their size and revisions, and whether attnlab opens each or the one-line reason it will not.
Reads config.json only, never a weight, and never the network."""

from __future__ import annotations

import argparse
import sys

from attnlab.commands.refusal import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="the cache to list (default: huggingface_hub's, HF_HUB_CACHE or HF_HOME/hub)",
    )


def run(args: argparse.Namespace) -> int:
    from attnlab.checkpoints.hf_cache import cache_dir
    from attnlab.checkpoints.hf_cache_scan import cached_models, table

    root = args.cache or str(cache_dir())
    models, problems = cached_models(root)
    for problem in problems:
        print(f"attnlab models: {one_line(problem)}", file=sys.stderr)
    if not models:
        print(f"No models in the Hugging Face cache at {root}; `attnlab get org/name` downloads one.")
        return 0
    print("\n".join(table(models)))
    print(f"{len(models)} models in {root}; open one with `attnlab ORG/NAME` (or ORG/NAME@REVISION).")
    return 0
