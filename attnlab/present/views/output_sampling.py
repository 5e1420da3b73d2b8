"""The output stage's sampling, as plain data (issue 35): which of the shown tokens survive the top-k / top-p
cut, their probabilities before and after it, where each setting came from, and the outcomes of 20 seeded
draws. Computed from one position's logits of one run (engine/sampling.py), never from another forward pass.

What the bars show when sampling is on: the distribution the next token is drawn from, softmax(logits / T)
after the top-k and top-p masks, renormalised over the kept tokens (0 for a cut token); `raw` holds each shown
token's softmax(logits / T) before the cut, drawn behind it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names, sampling
from attnlab.engine.trace import Trace

DRAWS = 20  # "Sample 20 times": seeds seed, seed + 1, …, seed + 19


@dataclass(frozen=True)
class SampleCounts:
    """The outcomes of DRAWS draws, most frequent first: each token, how often, and its share after the cut."""

    seeds: tuple[int, int]  # the first and the last seed
    ids: list[int]
    labels: list[str]
    counts: list[int]
    expected: list[float]  # the kept probability of each token (what the counts approach with more draws)
    first: int  # the token of the first draw (seed itself): what Generate would draw now

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True)
class SamplingCut:
    settings: str  # "sampling at T = 0.7, top-k 50, top-p 0.9, seed 0"
    sources: list[tuple[str, str, str]]  # (setting, value, where it came from: "you", "default", the file)
    kept: list[bool]  # [k] whether each shown bar survives the cut
    raw: np.ndarray  # [k] softmax(logits / T) of the shown tokens, before the cut
    values: np.ndarray  # [k] their probability after the cut, renormalised (0 when cut)
    n_kept: int  # how many tokens of the whole vocabulary survive
    vocab: int
    kept_mass: float  # the share of softmax(logits / T) the kept tokens held before renormalising
    samples: SampleCounts

    def text(self) -> str:
        """The sentence under the bars."""
        said = ", ".join(f"{f} {v} ({s})" for f, v, s in self.sources if f != "sample")
        return (
            f" Sampling: the bars are softmax(logits / T) after the top-k / top-p cut, renormalised over the "
            f"{self.n_kept:,} kept of {self.vocab:,} tokens (they held {self.kept_mass:.1%} before); the grey "
            f"bars behind are the probabilities before the cut, and a token below the dashed line is never "
            f"drawn. Settings: {said}."
        )


def _value(field: str, value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def sample_counts(probs: np.ndarray, seed: int, name: Callable[[int], str]) -> SampleCounts:
    """DRAWS draws from `probs` [V], the i-th with a generator at seed + i (engine/sampling.sample_counts)."""
    import torch

    drawn = sampling.sample_counts(torch.from_numpy(probs), seed, DRAWS)
    counted = sorted(Counter(drawn).items(), key=lambda item: (-item[1], item[0]))
    ids = [i for i, _n in counted]
    return SampleCounts(
        seeds=(seed, seed + DRAWS - 1),
        ids=ids,
        labels=[name(i) for i in ids],
        counts=[n for _i, n in counted],
        expected=[float(probs[i]) for i in ids],
        first=drawn[0],
    )


def sampling_cut(trace: Trace, position: int, ids: np.ndarray, name: Callable[[int], str]) -> SamplingCut | None:
    """The cut at `position` for the shown token `ids` [k], when the run samples (None when greedy)."""
    options = trace.options
    if not getattr(options, "sample", False) or names.LOGITS not in trace:
        return None
    settings = sampling.SamplingSettings.of(options)
    logits = trace.read(names.LOGITS, position)  # [V], only this row crosses to the host
    probs = sampling.kept_probs(logits, settings).numpy()  # [V] float32, what a draw is made from
    tempered = sampling.kept_probs(logits, sampling.SamplingSettings(True, settings.temperature, 0, 1.0)).numpy()
    kept = probs > 0  # [V]
    defaults = trace.info.get(sampling.GENERATION_KEY)
    return SamplingCut(
        settings=settings.text(),
        sources=[(f, _value(f, v), s) for f, v, s in sampling.sources(options, defaults)],
        kept=[bool(kept[i]) for i in ids],
        raw=tempered[ids].astype(np.float32),
        values=probs[ids].astype(np.float32),
        n_kept=int(kept.sum()),
        vocab=int(probs.shape[0]),
        kept_mass=float(tempered[kept].sum()),
        samples=sample_counts(probs, settings.seed, name),
    )
