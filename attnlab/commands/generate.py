"""`attnlab generate "TEXT"`: the greedy continuation of a text by a decoder-only model (the bundled language
model, or --checkpoint). stdout: the text with its continuation, as `LiveModel.generate` gives it; stderr:
what the model read when it differs from what was typed, and the unsure cue."""

from __future__ import annotations

import argparse

from attnlab.commands.loading import add_import_arguments, import_settings, load_any
from attnlab.commands.translate import (
    add_max_new_tokens,
    add_sampling_arguments,
    checked_text,
    report,
    sampling_options,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", metavar="TEXT", help="the beginning of a text (the prompt)")
    parser.add_argument(
        "--checkpoint",
        default="bundled:language",
        help="a decoder-only checkpoint or model folder, a model in the Hugging Face cache (org/name[@revision]), or "
        "bundled:NAME (default: bundled:language)",
    )
    add_max_new_tokens(parser, 30)
    add_sampling_arguments(parser)
    add_import_arguments(parser)


def run(args: argparse.Namespace) -> int:
    text = checked_text(args.text, args.max_new_tokens)
    model = load_any(args.checkpoint, **import_settings(args))
    if model.config.has_encoder:
        kind = "encoder-decoder: `attnlab translate` runs it" if model.config.has_decoder else "encoder-only"
        raise ValueError(f"this model is {kind}; `attnlab generate` continues a text with a decoder-only model")
    options = sampling_options(args, model)
    return report(model, model.generate(text, max_new_tokens=args.max_new_tokens, options=options), text, "tgt")
