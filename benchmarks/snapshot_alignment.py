"""How the cross-attention forms during training: the alignment figures of `attnlab eval` for every kept
training step of a model with snapshots (checkpoints/snapshots.py), plus how concentrated the attention is.

    .venv/bin/python benchmarks/snapshot_alignment.py [CHECKPOINT or bundled name] [--n 200] [--threads 1]

Prints one row per step: the training loss on those weights, the best single head's alignment accuracy, the
head-averaged accuracy of each decoder layer (the "predicting" reading of attnlab/training/evaluate.py: the
position predicting a French content word puts its largest cross-attention on the aligned English word), and
the mean entropy of the cross-attention rows in bits (log2 of the source length when spread evenly).
Used to choose which steps the bundled translation model keeps (docs/model-card.md).
"""

from __future__ import annotations

import argparse
import math

import torch

from attnlab.checkpoints.snapshots import load_snapshots
from attnlab.training.evaluate import alignment_accuracy, cross_attention, held_out_pairs


def mean_entropy_bits(model, pairs) -> tuple[float, float]:
    """Mean over decoder layers, heads and target positions of the cross-attention rows' entropy, in bits, and
    the same for an even spread over the source pieces (log2 S)."""
    total, even, rows = 0.0, 0.0, 0
    for att in cross_attention(model, pairs):  # [L, H, T, S]
        p = att.clamp_min(1e-12)
        n_rows = att.shape[0] * att.shape[1] * att.shape[2]
        total += float(-(p * p.log2()).sum(-1).sum())
        even += n_rows * math.log2(att.shape[-1])
        rows += n_rows
    return total / max(rows, 1), even / max(rows, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="translation")
    parser.add_argument("--n", type=int, default=200, help="held-out pairs to score (default 200)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    snapshots = load_snapshots(args.source)
    pairs = held_out_pairs(snapshots.final, args.n)
    _, even = mean_entropy_bits(snapshots.final, pairs)
    print(f"{snapshots.path.name}: {len(pairs)} held-out pairs; an even spread is {even:.2f} bits")
    print("step   loss   best head (layer, head)   head-average per layer   entropy (bits)")
    for step in snapshots.steps:
        model = snapshots.model_at(step)
        figures = alignment_accuracy(model, pairs)["predicting"]
        best = figures["best"]
        loss = snapshots.loss_at(step)
        layers = " ".join(f"{a:5.1%}" for a in figures["layer_head_average"])
        print(
            f"{step:5d}  {loss if loss is not None else float('nan'):5.2f}  "
            f"{best['accuracy']:6.1%} ({best['layer']}, {best['head']})          {layers}"
            f"       {mean_entropy_bits(model, pairs)[0]:.2f}"
        )


if __name__ == "__main__":
    main()
