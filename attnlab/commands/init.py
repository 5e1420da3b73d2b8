"""`attnlab init`: write a randomly initialised model of chosen sizes to a .safetensors checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnlab.commands.refusal import refuse
from attnlab.engine.config import ACTIVATIONS, ARCHITECTURES, POSITIONALS, ModelConfig
from attnlab.fileio import folder_problem


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", choices=ARCHITECTURES, default="encoder-decoder")
    parser.add_argument("--d-model", type=int, default=128, help="model width d_model (default 128)")
    parser.add_argument("--heads", type=int, default=4, help="heads; must divide d_model (default 4)")
    parser.add_argument("--d-ff", type=int, default=512, help="feed-forward hidden size (default 512)")
    parser.add_argument("--enc-layers", type=int, default=3, help="encoder layers (default 3)")
    parser.add_argument("--dec-layers", type=int, default=3, help="decoder layers (default 3)")
    parser.add_argument("--activation", choices=ACTIVATIONS, default="relu")
    parser.add_argument(
        "--norm",
        choices=("pre", "post"),
        default="post",
        help="LayerNorm placement (default post, as in the 2017 paper)",
    )
    parser.add_argument("--positional", choices=POSITIONALS, default="sinusoidal")
    parser.add_argument("--max-len", type=int, default=256, help="longest sequence (default 256)")
    parser.add_argument("--seed", type=int, default=0, help="seed; the same seed gives the same weights")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it already exists")
    parser.add_argument("--out", required=True, help="where to write the checkpoint (.safetensors)")


def fail(message: str) -> int:
    return refuse("attnlab init", message)


def run(args: argparse.Namespace) -> int:
    from attnlab.checkpoints import CheckpointError, random_model, save_checkpoint

    out = Path(args.out)
    if out.exists() and not args.force:
        return fail(f"{str(out)!r} already exists; choose another --out or pass --force to overwrite it.")
    unwritable = folder_problem(out)
    if unwritable:  # said before the model is built
        return fail(f"cannot write {str(out)!r}: {unwritable}.")
    config = ModelConfig(
        arch=args.arch,
        d_model=args.d_model,
        n_heads=args.heads,
        d_ff=args.d_ff,
        n_encoder_layers=args.enc_layers,
        n_decoder_layers=args.dec_layers,
        activation=args.activation,
        norm_first=args.norm == "pre",
        positional=args.positional,
        max_len=args.max_len,
    )
    # the vocabulary sizes come from the tokenizer, so they cannot be what is wrong here
    problems = [p for p in config.problems() if "vocab" not in p]
    if problems:
        listed = " ".join(f"({i}) {p}." for i, p in enumerate(problems, 1))
        return fail(f"these sizes cannot make a model: {listed}")
    model = random_model(config, seed=args.seed)
    try:
        save_checkpoint(model, out)
    except CheckpointError as e:
        return fail(str(e))
    cfg = model.config
    layers = {
        "encoder-decoder": f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers",
        "decoder-only": f"{cfg.n_decoder_layers} decoder layers",
        "encoder-only": f"{cfg.n_encoder_layers} encoder layers",
    }[cfg.arch]
    n_params = sum(t.numel() for t in model.module.checkpoint_tensors().values())
    print(
        f"Wrote {out}: random {cfg.arch}, d_model {cfg.d_model}, {cfg.n_heads} heads, d_ff {cfg.d_ff}, "
        f"{layers}, {args.norm}-norm, {cfg.positional} positions, {n_params:,} parameters, "
        f"word tokenizer ({cfg.tgt_vocab_size} tokens), seed {args.seed}."
    )
    return 0
