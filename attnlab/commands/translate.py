"""`attnlab translate "TEXT"`: print the greedy translation of a sentence (the bundled translation model, or
--checkpoint). What `LiveModel.translate` returns goes to stdout; on stderr, what the model read when that
differs from what was typed (a classroom model reads the corpus form, engine/typed.py) and the unsure cue."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from attnlab.commands.loading import add_import_arguments, import_settings, load_any
from attnlab.limits import MAX_SENTENCE_CHARS

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

MAX_NEW_TOKENS = 1000  # far more than any model here writes; generation stops at </s> or the model's length


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", metavar="TEXT", help="the sentence to translate")
    parser.add_argument(
        "--checkpoint",
        default="bundled:translation",
        help="an encoder-decoder checkpoint or model folder, a model in the Hugging Face cache (org/name[@revision]), "
        "or bundled:NAME (default: bundled:translation)",
    )
    add_max_new_tokens(parser, 40)
    add_sampling_arguments(parser)
    add_import_arguments(parser)


def add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    """--temperature --sample --top-k --top-p --seed: the option table's flags for choosing the next token."""
    from attnlab.engine.option_specs import TEMPERATURE
    from attnlab.engine.option_specs_sampling import SAMPLING_SPECS

    for spec in (TEMPERATURE, *SAMPLING_SPECS):
        for flag in spec.cli:
            parser.add_argument(flag.flag, **dict(flag.arguments))


def sampling_options(args: argparse.Namespace, model: LiveModel) -> RunOptions:
    """The options the sampling flags ask for over the model's generation_config.json defaults (fast runs)."""
    from attnlab.engine.option_specs import TEMPERATURE
    from attnlab.engine.option_specs_sampling import SAMPLING_SPECS
    from attnlab.engine.options import RunOptions
    from attnlab.engine.sampling_settings import with_model_defaults

    options = with_model_defaults(RunOptions(record=False), model.metadata)
    for spec in (TEMPERATURE, *SAMPLING_SPECS):
        for flag in spec.cli:
            options = flag.apply(options, getattr(args, flag.flag.lstrip("-").replace("-", "_")))
    return options.validate(model.config)


def add_max_new_tokens(parser: argparse.ArgumentParser, default: int) -> None:
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=default,
        metavar="N",
        help=f"stop after N new tokens (default {default}; at most {MAX_NEW_TOKENS})",
    )


def checked_text(text: str, max_new_tokens: int) -> str:
    """The argument text, or ValueError (exit 2) for a count out of range or an over-long text."""
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise ValueError(f"--max-new-tokens must be between 1 and {MAX_NEW_TOKENS}, not {max_new_tokens}")
    if len(text) > MAX_SENTENCE_CHARS:
        raise ValueError(f"the text has {len(text):,} characters; at most {MAX_SENTENCE_CHARS:,} are read")
    return text


def run(args: argparse.Namespace) -> int:
    text = checked_text(args.text, args.max_new_tokens)
    model = load_any(args.checkpoint, **import_settings(args))
    if not (model.config.has_encoder and model.config.has_decoder):
        kind = "decoder-only: it has no encoder" if model.config.has_decoder else "encoder-only: it has no decoder"
        raise ValueError(
            f"this model is {kind}; `attnlab translate` needs an encoder-decoder model"
            + (" (`attnlab generate` continues a text)" if model.config.has_decoder else "")
        )
    options = sampling_options(args, model)
    return report(model, model.generate(text, max_new_tokens=args.max_new_tokens, options=options), text, "src")


def report(model: LiveModel, steps: Iterable[Trace], text: str, side: str) -> int:
    """Run the greedy steps; print the generated text, and on stderr what the model read and any unsure cue."""
    from attnlab.engine.typed import unsure_notice

    last = None
    for step in steps:
        last = step
    read = model.typed_form(text, side)
    if read != text:
        print(f"read as: {read}", file=sys.stderr)
    if last is None:
        return 0
    print(last.info["generated"])
    if last.info.get("unsure"):
        print(unsure_notice(last.info["unsure"]), file=sys.stderr)
    return 0
