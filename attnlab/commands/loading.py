"""What every command that opens a checkpoint shares: the path (a file, a folder, a model in the Hugging Face cache
by id: org/name[@revision], or bundled:NAME) and the settings a bare nn.Transformer state dict cannot say itself
(--heads --norm --activation) or a nanoGPT checkpoint / bare state dict lacks (--tokenizer)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel

IMPORT_HELP = "only for a bare nn.Transformer state dict, whose weights do not record it"


def add_import_arguments(parser: argparse.ArgumentParser, run_options: bool = False) -> None:
    """--tokenizer and --activation always; --heads and --norm unless the command has them as run options
    (`attnlab trace`: there they also describe a bare state dict, which has no trained value to re-wire)."""
    group = parser.add_argument_group("opening a checkpoint that does not say everything")
    if not run_options:
        group.add_argument("--heads", type=int, default=None, help=f"attention heads ({IMPORT_HELP}; default 8)")
        group.add_argument(
            "--norm", choices=("pre", "post"), default=None, help=f"LayerNorm placement ({IMPORT_HELP}; default post)"
        )
    group.add_argument(
        "--activation",
        choices=("relu", "gelu"),
        default=None,
        help=f"feed-forward activation ({IMPORT_HELP}; default relu)",
    )
    group.add_argument(
        "--tokenizer",
        metavar="PATH",
        default=None,
        help="a tokenizer.json or a folder with tokenizer files, for a nanoGPT checkpoint or a bare state dict, "
        "or instead of a Hugging Face folder's own",
    )


def import_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "heads": getattr(args, "heads", None),
        "norm": getattr(args, "norm", None),
        "activation": getattr(args, "activation", None),
        "tokenizer": getattr(args, "tokenizer", None),
    }


def load_any(spec: str, **settings: Any) -> LiveModel:
    """A checkpoint path (file or folder), a model id in the Hugging Face cache, or 'bundled:NAME' for a bundled
    classroom model."""
    from attnlab.checkpoints import load_bundled, load_checkpoint

    if spec.startswith("bundled:"):
        return load_bundled(spec.split(":", 1)[1] or "translation")
    return load_checkpoint(spec, **settings)
