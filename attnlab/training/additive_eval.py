"""Held-out figures for the additive-attention (Bahdanau) GRU model, measured as `attnlab eval` measures the
translation model (the same functions: exact match, cross-attention alignment, the hand-written set).

The test sentences are the translation recipe's held-out split (the translation model's), less every pair
whose English the GRU model saw in training: it was trained on the training side of a smaller corpus
(`n_pairs` in its metadata), whose split is not the translation model's, so about 30% of the translation
model's held-out pairs were in the GRU model's training data. What is left is held out for both models.

This module decodes the GRU model (greedy ids, its attention); the figures themselves are evaluate.py's
(`evaluate_additive`), which imports this one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import torch

from attnlab.checkpoints.additive import AdditiveModel
from attnlab.training.corpus import Pair
from attnlab.training.data import decoder_ids, make_batch, source_ids
from attnlab.training.handwritten import sentence_key
from attnlab.training.recipes import TRANSLATION

TRANSLATION_CORPUS_SEED = 0  # the shipped translation model's corpus seed (its metadata: corpus.seed)


def held_out_pairs(model: AdditiveModel, n: int | None = None) -> tuple[list[Pair], dict[str, Any]]:
    """(pairs, facts): the translation recipe's held-out pairs that the GRU model never trained on (the first
    `n` of them, or all), and how they were chosen."""
    from attnlab.training.train import split_corpus

    r = TRANSLATION
    meta = model.metadata
    if "n_pairs" not in meta or "seed" not in meta:
        raise ValueError(f"{model.name!r} has no corpus facts (n_pairs, seed) in its metadata")
    _, test = split_corpus(r.n_pairs, TRANSLATION_CORPUS_SEED, r.test_fraction, r.split_seed, r.corpus_version)
    trained, _ = split_corpus(int(meta["n_pairs"]), int(meta["seed"]), r.test_fraction, r.split_seed, r.corpus_version)
    seen = {sentence_key(p.src) for p in trained}
    unseen = [p for p in test if sentence_key(p.src) not in seen]
    facts = {
        "split": f"translation recipe held-out split ({r.n_pairs} pairs, seed {TRANSLATION_CORPUS_SEED}, "
        f"corpus version {r.corpus_version}), less the pairs the GRU model trained on",
        "n_translation_held_out": len(test),
        "n_seen_in_gru_training": len(test) - len(unseen),
    }
    return (unseen if n is None else unseen[:n]), facts


def _by_source_length(sources: Sequence[list[int]]) -> dict[int, list[int]]:
    """Indices grouped by source length: the bidirectional GRU must not read padding, so batches never pad."""
    groups: dict[int, list[int]] = defaultdict(list)
    for i, ids in enumerate(sources):
        groups[len(ids)].append(i)
    return groups


def greedy_ids(model: AdditiveModel, texts: Sequence[str], chunk: int = 64) -> list[list[int]]:
    """The greedy output piece ids of each text (without specials), as `AdditiveModel.translate` makes them."""
    tok = model.tokenizer
    sources = [source_ids(tok, t) for t in texts]
    out: list[list[int]] = [[] for _ in texts]
    for indices in _by_source_length(sources).values():
        for start in range(0, len(indices), chunk):
            part = indices[start : start + chunk]
            src = torch.tensor([sources[i] for i in part])  # [B, S]
            ids = model.module.greedy_batch(src, tok.bos_id, tok.eos_id, tok.pad_id).tolist()  # [B, T]
            for i, row in zip(part, ids, strict=True):
                out[i] = row[: row.index(tok.eos_id)] if tok.eos_id in row else row
    return out


@torch.no_grad()
def attention(model: AdditiveModel, pairs: Sequence[Pair], chunk: int = 64) -> list[torch.Tensor]:
    """Teacher-forced attention of each pair as [1, 1, T, S] (one "layer", one "head"): the layout the
    Transformer's cross-attention has in `evaluate.cross_attention`, so one alignment rule scores both."""
    tok = model.tokenizer
    examples = [(source_ids(tok, p.src), decoder_ids(tok, p.tgt)) for p in pairs]
    result: list[torch.Tensor] = [torch.empty(0)] * len(pairs)
    for indices in _by_source_length([e[0] for e in examples]).values():
        for start in range(0, len(indices), chunk):
            part = indices[start : start + chunk]
            batch = make_batch([examples[i] for i in part], tok.pad_id)
            _, weights = model.module(batch.src, batch.src_pad, batch.tgt_in)  # [B, T, S]
            for b, i in enumerate(part):
                t = len(examples[i][1]) - 1
                result[i] = weights[b, :t][None, None].clone()  # [1, 1, T, S]
    return result
