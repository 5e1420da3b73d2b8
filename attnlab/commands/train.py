"""`attnlab train`: rebuild the classroom models from a seed (the ones shipped in resources/).

attnlab train --model all --seed 0 --out-dir resources
"""

from __future__ import annotations

import argparse

from attnlab.commands.refusal import refuse
from attnlab.training.recipes import MODEL_NAMES, RECIPES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", choices=(*MODEL_NAMES, "all"), default="all", help="which classroom model to train (default: all)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the corpus, the weights and the batch order (default: 0)"
    )
    parser.add_argument(
        "--out-dir",
        default="resources",
        help="folder for <model>.safetensors; loss curves and figures go to <out-dir>/training/",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="optimiser steps (default: the recipe's, " + ", ".join(f"{k} {r.steps}" for k, r in RECIPES.items()) + ")",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="sentence pairs to generate before the train/test split (default: "
        + ", ".join(f"{k} {r.n_pairs}" for k, r in RECIPES.items())
        + ")",
    )
    parser.add_argument(
        "--eval-n",
        type=int,
        default=None,
        help="evaluate on the first N held-out sentences only (default: all of them)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="CPU threads for PyTorch (default: 2; on a machine shared with other busy "
        "processes, 1 avoids threads waiting on each other)",
    )
    parser.add_argument(
        "--snapshots",
        type=step_list,
        default=(),
        metavar="STEPS",
        help="also keep the weights after these training steps (comma-separated, e.g. 0,200,400,800; 0 is "
        "the model as initialised; the last step is the checkpoint itself), in float16, in "
        "<out-dir>/<model>.snapshots.safetensors; the app's "
        "training-step slider moves through them",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def step_list(text: str) -> tuple[int, ...]:
    """ "0,200,400" -> (0, 200, 400); argparse turns the ValueError into a usage message."""
    try:
        steps = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, e.g. 0,200,400 (got {text!r})"
        ) from None
    if not steps or steps[0] < 0:
        raise argparse.ArgumentTypeError(f"expected steps of 0 or more, e.g. 0,200,400 (got {text!r})")
    return steps


def run(args: argparse.Namespace) -> int:
    try:
        import matplotlib  # noqa: F401
        import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints  # noqa: F401
    except ImportError as e:
        return refuse("attnlab train", f"needs matplotlib and tqdm ({e.name} is missing): pip install 'attnlab[train]'")
    from attnlab.commands.eval import summary_text
    from attnlab.training.classroom import build, recipe_for

    if args.threads < 1:
        return refuse("attnlab train", f"--threads must be at least 1 (got {args.threads})")
    names = MODEL_NAMES if args.model == "all" else (args.model,)
    try:  # every setting checked before the first model trains
        for name in names:
            recipe_for(name, args.steps, args.pairs)
    except ValueError as e:
        return refuse("attnlab train", e)
    for name in names:
        try:
            figures = build(
                name,
                args.seed,
                args.out_dir,
                steps=args.steps,
                n_pairs=args.pairs,
                progress=not args.quiet,
                eval_n=args.eval_n,
                threads=args.threads,
                snapshot_steps=args.snapshots,
            )
        except ValueError as e:  # bad input (--steps 0, --pairs 5, …): exit 2 as every command does
            return refuse("attnlab train", e)
        except OSError as e:  # the output could not be written
            return refuse("attnlab train", e, code=1)
        print(f"{name}: written to {args.out_dir}/{name}.safetensors")
        if args.snapshots:
            print(
                f"{name}: snapshots at steps {', '.join(map(str, args.snapshots))} "
                f"in {args.out_dir}/{name}.snapshots.safetensors"
            )
        print(summary_text(figures))
    return 0
