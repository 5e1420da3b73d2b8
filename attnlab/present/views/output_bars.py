"""The output stage's bars as plain data (`OutputView`), shared by the vocabulary output (views/output.py) and
ELECTRA's replaced-token output (views/replaced.py): the top-k order and how a bar's value is written. A leaf."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present.ablation import DistributionChange

if TYPE_CHECKING:
    from attnlab.present.views.output_sampling import SamplingCut


def top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first (ties: lower id first)."""
    k = max(1, min(int(k), values.shape[0]))
    order = np.lexsort((np.arange(values.shape[0]), -values))
    return order[:k]


def value_text(value: float, kind: str) -> str:
    """A bar's value as written beside it: a percentage for probabilities, two decimals for logits."""
    return f"{value:.1%}" if kind == names.PROBS else f"{value:.2f}"


@dataclass(frozen=True)
class OutputView:
    kind: str  # names.LOGITS or names.PROBS
    position: int
    positions: list[str]  # one printable label per position (the chooser's entries, "i: label")
    ids: list[int]  # the top-k ids, best first
    labels: list[str]  # their token names
    values: np.ndarray  # [k] float32
    value_texts: list[str]  # each bar's value as written
    row: np.ndarray  # [V] the whole distribution at `position`
    temperature: float
    title: str
    note: str
    ablation: str  # "Ablated: …: before → after" ('' without ablated heads)
    change: DistributionChange | None
    sampling: SamplingCut | None = None  # the top-k / top-p cut and 20 seeded draws when the run samples

    @property
    def probabilities(self) -> bool:
        return self.kind == names.PROBS
