"""Train the additive-attention (Bahdanau) GRU model on the translation model's corpus and tokenizer.

    python -m attnlab.training.additive --out resources/bahdanau.safetensors --minutes 9 --log /tmp/bahdanau.log

Same corpus (the translation recipe's split, training side only) and the same BPE tokenizer as the bundled
translation model, so the two can be compared sentence by sentence. Seeded; stops after `steps` or `minutes`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.checkpoints.additive import AdditiveModel, save_additive
from attnlab.engine.additive import AdditiveConfig, AdditiveSeq2Seq
from attnlab.engine.tokenizer import Tokenizer
from attnlab.training.data import Batch, BatchStream
from attnlab.training.recipes import TRANSLATION
from attnlab.training.train import make_examples, split_corpus


def _batch_loss(module: AdditiveSeq2Seq, batch: Batch, pad_id: int) -> torch.Tensor:
    logits, _ = module(batch.src, batch.src_pad, batch.tgt_in)  # [B, T, V]
    return F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=pad_id)


def train_additive(
    tokenizer: Tokenizer,
    steps: int,
    minutes: float,
    seed: int = 0,
    n_pairs: int = TRANSLATION.n_pairs,
    max_tokens: int = 800,
    lr: float = 3e-3,
    log: Callable[[str], object] = print,
    cfg: AdditiveConfig | None = None,
    max_source: int = 12,
) -> AdditiveModel:
    """Adam with a short warm-up; logs the mean loss every 50 steps. Only pairs whose source has at most
    `max_source` ids (pieces + </s>) are used: a small model on one core learns the short ones first."""
    recipe = TRANSLATION
    train_pairs, _test = split_corpus(n_pairs, seed, recipe.test_fraction, recipe.split_seed, recipe.corpus_version)
    examples = [
        e
        for e in make_examples(train_pairs, tokenizer, "both", recipe.drop_period, seed)
        if len(e[0] or ()) <= max_source
    ]
    log(f"{len(examples)} training pairs with at most {max_source} source ids")
    torch.manual_seed(seed)
    module = AdditiveSeq2Seq(cfg or AdditiveConfig(vocab_size=tokenizer.vocab_size))
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    stream = BatchStream(examples, max_tokens, tokenizer.pad_id, seed)
    start, step = time.monotonic(), 0
    losses: list[float] = []
    while step < steps and time.monotonic() - start < minutes * 60:
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / 100)
        loss = _batch_loss(module, next(stream), tokenizer.pad_id)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        if step % 50 == 0:
            log(f"step {step} loss {sum(losses[-50:]) / 50:.3f} ({time.monotonic() - start:.0f} s)")
    tail = losses[-50:]
    meta = {
        "steps": step,
        "seed": seed,
        "n_pairs": n_pairs,
        "final_loss": sum(tail) / max(len(tail), 1),
        "seconds": round(time.monotonic() - start),
        "max_source": max_source,
        "pairs_used": len(examples),
        "corpus": "translation recipe split (training side)",
        "tokenizer": "the bundled translation model's BPE tokenizer",
    }
    return AdditiveModel(module, tokenizer, meta)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--minutes", type=float, default=9.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-pairs", type=int, default=20000)
    parser.add_argument("--max-source", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from attnlab.checkpoints.bundled import load_bundled

    tokenizer = load_bundled("translation").src_tokenizer
    if tokenizer is None:  # the bundled translation model always has a source tokenizer
        raise SystemExit("the bundled translation model has no source tokenizer")
    log_file = args.log.open("w") if args.log else None

    def log(line: str) -> None:
        print(line, flush=True)
        if log_file:
            log_file.write(line + "\n")
            log_file.flush()

    model = train_additive(
        tokenizer, args.steps, args.minutes, args.seed, n_pairs=args.n_pairs, log=log, max_source=args.max_source
    )
    save_additive(model, args.out)
    log(f"saved {args.out} after {model.metadata['steps']} steps, loss {model.metadata['final_loss']:.3f}")
    for text in ("the black cat sees the small dog .", "the girl eats an apple ."):
        log(f"{text} -> {model.translate(text).text}")


if __name__ == "__main__":
    main()
