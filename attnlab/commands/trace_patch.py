"""`attnlab trace --patch-from "A sentence" --patch ENTRY[:POSITION[:HEAD]]` (issue 37): run A, run B (--src)
patched with A's value of ENTRY, and the answer's logit difference in A, B and the patched run.

The saved trace is the patched run B (its banner line says what was patched). The answer is --answer against
--against (default: run A's top next token against run B's), read at the last position, as the GUI's output
panel shows it (present/patching.py). Heads count from 1, positions from 0, as the banner writes them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace
    from attnlab.present.patch_request import PatchAsk


def add_patch_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("activation patching (issue 37)")
    group.add_argument(
        "--patch-from",
        metavar="SENTENCE",
        default=None,
        help="run A's sentence: --patch replaces entries of this run (B, --src) with their values in run A",
    )
    group.add_argument(
        "--patch-from-tgt",
        metavar="TEXT",
        default=None,
        help="run A's decoder input (default: run B's --tgt; the two runs must have the same length)",
    )
    group.add_argument(
        "--patch",
        action="append",
        default=[],
        metavar="ENTRY[:POSITION[:HEAD]]",
        help="patch ENTRY (a site's q, k, v, context or out, a layer's ffn.out or out) from run A, at POSITION "
        "(from 0; empty: every position) and HEAD (from 1; absent: every head), like dec.2.cross.out:2 or "
        "dec.1.self.context::3; repeat for more",
    )
    group.add_argument("--answer", metavar="TOKEN", default=None, help="the answer's token (default: A's top)")
    group.add_argument("--against", metavar="TOKEN", default=None, help="the wrong token (default: B's top)")


def patch_asks(args: argparse.Namespace) -> tuple[PatchAsk, ...]:
    """The patches the flags ask for (ValueError in one line: a bad spec, a flag without its partner)."""
    from attnlab.present.patch_request import parse_spec

    if not args.patch:
        if args.patch_from is not None or args.patch_from_tgt is not None:
            raise ValueError("--patch-from needs --patch ENTRY[:POSITION[:HEAD]] (what to patch)")
        if args.answer is not None or args.against is not None:
            raise ValueError("--answer and --against go with --patch")
        return ()
    if args.patch_from is None:
        raise ValueError("--patch needs --patch-from SENTENCE (run A, whose values are patched in)")
    if args.chat is not None or args.generate is not None:
        raise ValueError("--patch takes --src text and --tgt (not --chat or --generate)")
    return tuple(parse_spec(spec, args.patch_from, args.patch_from_tgt) for spec in args.patch)


def patched_trace(model: LiveModel, args: argparse.Namespace, options: RunOptions, asks: tuple[PatchAsk, ...]) -> Trace:
    """Run A and B, patch B from A, print what was patched and the answer's logit difference; the patched run B
    (PatchError or ValueError in one line, before any run for a token the vocabulary lacks)."""
    from attnlab.engine.patching import departs
    from attnlab.present.patch_request import patched_runs, token_id

    correct = None if args.answer is None else token_id(model, args.answer, "--answer")
    wrong = None if args.against is None else token_id(model, args.against, "--against")
    a, b, patched = patched_runs(model, args.src, args.tgt, options, asks)
    print(f"Run A: {args.patch_from!r}; run B: {args.src!r}.")
    for line in departs(patched.options.patch):
        print(line[0].upper() + line[1:] + ".")
    print(answer_line(model, (correct, wrong), a, b, patched) + ".")
    return patched


def answer_line(model: LiveModel, tokens: tuple[int | None, int | None], a: Trace, b: Trace, patched: Trace) -> str:
    """logit(answer) − logit(against) in A, B and the patched run, and what the patch changed; a token None:
    run A's top token (the answer), run B's (against)."""
    from attnlab.present.model_info import output_vocabulary
    from attnlab.present.patching import answer_of, answer_text, default_answer

    namer = output_vocabulary(model)
    top = default_answer(a, b, namer)
    correct, wrong = tokens
    answer = answer_of(top.correct if correct is None else correct, top.wrong if wrong is None else wrong, namer)
    return answer_text(a, b, patched, answer)
