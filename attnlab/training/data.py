"""Sentence pairs into training batches: ids with specials, padding, batching by length.

Conventions (the same as LiveModel, so training and the app see identical inputs):
  source ids   = pieces + </s>
  decoder ids  = <s> + pieces + </s>; the model reads ids[:-1] and learns to predict ids[1:]
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from attnlab.engine.tokenizer import BPETokenizer, Tokenizer


def source_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    """pieces + </s>, what the encoder reads."""
    return tokenizer.encode(text)[1] + [tokenizer.eos_id]


def decoder_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    """<s> + pieces + </s>: the decoder input is all but the last, the prediction target all but the first."""
    return [tokenizer.bos_id] + tokenizer.encode(text)[1] + [tokenizer.eos_id]


def word_piece_spans(tokenizer: BPETokenizer, text: str) -> list[list[int]]:
    """For each whitespace-separated word of `text`, the indices of its pieces in `tokenizer.encode(text)`.

    Uses the character offsets the `tokenizers` library reports, so punctuation split off a word stays in it.
    Assumes `text` is already clean (single spaces, no control characters), as corpus sentences are.
    """
    enc = tokenizer.hf.encode(text, add_special_tokens=False)
    starts, pos = [], 0
    for word in text.split(" "):
        starts.append(pos)
        pos += len(word) + 1
    spans: list[list[int]] = [[] for _ in starts]
    w = 0
    for piece_index, (begin, _end) in enumerate(enc.offsets):
        while w + 1 < len(starts) and begin >= starts[w + 1]:
            w += 1
        spans[w].append(piece_index)
    return spans


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest: ids [B, T] int64 and pad [B, T] bool (True at <pad>)."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)  # [B, T]
    for row, s in enumerate(seqs):
        ids[row, : len(s)] = torch.tensor(s, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in seqs])  # [B]
    pad = torch.arange(width)[None, :] >= lengths[:, None]  # [B, T]
    return ids, pad


@dataclass(frozen=True)
class Batch:
    """One training batch. src/src_pad are None for a decoder-only model."""

    src: torch.Tensor | None  # [B, S]
    src_pad: torch.Tensor | None  # [B, S]
    tgt_in: torch.Tensor  # [B, T] decoder input (<s> + pieces)
    tgt_pad: torch.Tensor  # [B, T]
    tgt_out: torch.Tensor  # [B, T] what each position should predict (pieces + </s>), <pad> where padded

    @property
    def n_tokens(self) -> int:
        return int((~self.tgt_pad).sum())


def make_batch(examples: Sequence[tuple[list[int] | None, list[int]]], pad_id: int) -> Batch:
    """examples: (source ids or None, decoder ids with <s> and </s>)."""
    src = src_pad = None
    if examples[0][0] is not None:
        src, src_pad = pad_batch([e[0] or [] for e in examples], pad_id)  # all have a source here
    tgt_in, tgt_pad = pad_batch([e[1][:-1] for e in examples], pad_id)
    tgt_out, _ = pad_batch([e[1][1:] for e in examples], pad_id)
    return Batch(src, src_pad, tgt_in, tgt_pad, tgt_out)


def length_batches(
    examples: Sequence[tuple[list[int] | None, list[int]]], max_tokens: int, rng: random.Random
) -> list[list[int]]:
    """Indices of `examples` grouped into batches of similar length, about `max_tokens` tokens each
    (counting the longer side of each pair, padded). Sorting uses a little random jitter so batches differ
    from epoch to epoch; the batch order is shuffled. Deterministic given the `rng` state."""

    def size(i: int) -> int:
        src, tgt = examples[i]
        return max(len(tgt), len(src) if src is not None else 0)

    order = sorted(range(len(examples)), key=lambda i: (size(i) + rng.random() * 2.0, i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        longest_if_added = max(longest, size(i))
        if current and longest_if_added * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest_if_added = [], size(i)
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


class BatchStream:
    """Endless batches: epoch after epoch over the examples, re-batched and reshuffled each epoch."""

    def __init__(
        self, examples: Iterable[tuple[list[int] | None, list[int]]], max_tokens: int, pad_id: int, seed: int
    ) -> None:
        self.examples = list(examples)
        self.max_tokens = max_tokens
        self.pad_id = pad_id
        self.rng = random.Random(seed)
        self.epoch = 0
        self._queue: list[list[int]] = []

    def __iter__(self) -> BatchStream:
        return self

    def __next__(self) -> Batch:
        if not self._queue:
            self._queue = length_batches(self.examples, self.max_tokens, self.rng)
            self.epoch += 1
        indices = self._queue.pop()
        return make_batch([self.examples[i] for i in indices], self.pad_id)
