"""The token → token lines of one head as plain data: the chosen head's weights [Tq, Tk], the token labels of
both columns, and the lines worth drawing (weights ≥ LINE_THRESHOLD), with the sentences."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing_message
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.long_map import is_long
from attnlab.present.views.model import MessageView
from attnlab.present.views.site import SiteView

LINE_THRESHOLD = 0.05  # weaker links are not drawn
QUERY_HEADER, KEY_HEADER = "queries (attend from)", "keys (attended to)"

Line = tuple[int, int, float]  # (query index, key index, weight)


def strong_links(weights: np.ndarray, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query indices, key indices, weights) of the links ≥ LINE_THRESHOLD in `weights` [Tq, Tk], row by row;
    `keep` bool [Tq, Tk] limits them (one token's lines). NaN weights count as 0."""
    w = np.nan_to_num(weights, nan=0.0)  # [Tq, Tk]
    chosen = w >= LINE_THRESHOLD if keep is None else (w >= LINE_THRESHOLD) & keep
    q_idx, k_idx = np.nonzero(chosen)
    return q_idx, k_idx, w[q_idx, k_idx]


@dataclass(frozen=True)
class LinesView:
    weights: np.ndarray  # [Tq, Tk] float32 of the chosen head
    rows: list[str]  # query labels (decoder rows "<s> → le"; numbers where the trace has no tokens)
    cols: list[str]  # key labels
    head: int
    n_heads: int
    lines: list[Line]  # the links drawn: weight ≥ LINE_THRESHOLD
    title: str
    note: str
    threshold: float = LINE_THRESHOLD

    kind = "lines"


LONG_LINES = (
    "The token → token lines draw one label per token: with {tq:,} queries and {tk:,} keys they cannot be read. "
    "The weights step shows this head's map; zoom in there to read single tokens."
)


def lines_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> LinesView | MessageView:
    site = stage.site or ""
    name = names.site_entry(site, "weights")
    if name not in trace:
        return MessageView("lines", missing_message("The attention weights", [name]))
    sv = SiteView(trace, site, display, vocab)
    if is_long((sv.tq, sv.tk)):  # one line per strong weight and a label per token: not at thousands of tokens
        return MessageView("lines", LONG_LINES.format(tq=sv.tq, tk=sv.tk))
    weights = np.ascontiguousarray(array(trace, name)[sv.head], dtype=np.float32)  # [Tq, Tk]
    tq, tk = weights.shape
    q_idx, k_idx, values = strong_links(weights)
    lines = [(int(q), int(k), float(v)) for q, k, v in zip(q_idx, k_idx, values, strict=True)]
    return LinesView(
        weights=weights,
        rows=sv.rows or [str(i) for i in range(tq)],
        cols=sv.cols or [str(i) for i in range(tk)],
        head=sv.head,
        n_heads=sv.n_heads,
        lines=lines,
        title=f"token → token lines · {sv.name} · {sv.head_text} · queries left, keys right",
        note=(
            f"Each line joins a query (left) to a key it reads (right); bolder and "
            f"thicker = more weight. Only weights ≥ {LINE_THRESHOLD:g} are drawn "
            f"({len(lines)} of {tq * tk}). Hover a token to see only its lines."
        ),
    )
