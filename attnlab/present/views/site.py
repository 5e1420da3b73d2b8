"""What every view of one attention site needs: its heads, the chosen head, the token labels of both axes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnlab.engine import names
from attnlab.engine.overview import map_shape
from attnlab.engine.trace import Trace
from attnlab.present import words
from attnlab.present.facts import array, row_labels, site_name, site_sides, tokens
from attnlab.present.stages import ViewState


def clamp_head(head: int, n_heads: int) -> int:
    return min(max(int(head), 0), max(n_heads - 1, 0))


def axis_title(side: str, role: str) -> str:
    """'decoder query' style axis titles: short, as a map of four rows is about 150 px tall at 1024×768 (the
    title runs along it; 'query (decoder tokens)' was cut off)."""
    return f"{words.word(names.side_stack(side)).lower()} {role}"


def token_axis(side: str) -> str:
    """'encoder token': the rows of Q, K and V."""
    return axis_title(side, "token")


class SiteView:
    """Heads, the chosen head and token labels of an attention site (read from its queries or its weights)."""

    def __init__(self, trace: Trace, site: str, view: ViewState, vocab: Callable[[int], str] | None = None):
        self.site = site
        self.q_side, self.k_side = site_sides(site)
        q_name, weights_name = names.site_entry(site, "q"), names.site_entry(site, "weights")
        q = trace[q_name] if q_name in trace else trace[weights_name]
        self.n_heads = int(q.shape[0])
        self.head = clamp_head(view.head, self.n_heads)
        shape = map_shape(trace, weights_name) if weights_name in trace else None  # read nothing (long maps)
        tq = int(shape[1]) if shape is not None else int(q.shape[1])
        tk = int(shape[2]) if shape is not None else tq
        self.tq, self.tk = tq, tk  # the map's query rows and key columns
        self.rows = row_labels(trace, self.q_side, tq, vocab)  # decoder rows: "<s> → le"
        self.cols = tokens(trace, self.k_side, tk)
        self.name = site_name(site)

    @property
    def head_text(self) -> str:
        return f"{words.head_words(self.head)} of {self.n_heads}"

    @property
    def query_axis(self) -> str:
        return axis_title(self.q_side, "query")

    @property
    def key_axis(self) -> str:
        return axis_title(self.k_side, "key")


def blocked_cells(trace: Trace, site: str) -> np.ndarray | None:
    """bool [Tq, Tk]: True where the additive mask is −inf (the query may not look at that key)."""
    name = names.site_entry(site, "mask")
    if name not in trace:
        return None
    blocked = np.isneginf(array(trace, name))
    return blocked if blocked.any() else None
