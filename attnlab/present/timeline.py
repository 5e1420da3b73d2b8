"""A generation's timeline (LiveModel.generate's traces, one per step): the attention maps grown a row per step,
for a scrubber. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present.texts import real_length

if TYPE_CHECKING:  # torch: not before the window's first paint (tests/project/test_startup_imports.py)
    from attnlab.engine.trace import Trace


class Timeline:
    """The attention maps of one generation, built a row per step: `map_at(k, site, head)` is the map as of step
    k ([T_k, T_k], float32, later keys 0), a view of one matrix filled once, so scrubbing copies nothing."""

    def __init__(self, steps: list[Trace]):
        self.steps = steps
        self.ends = [t.info["rows"][1] for t in steps]  # the positions computed by the end of each step
        self._maps: dict[tuple[str, int], np.ndarray] = {}

    def _filled(self, site: str, head: int) -> np.ndarray:
        key = (site, head)
        if key not in self._maps:
            n = self.ends[-1]
            full = np.zeros((n, n), dtype=np.float32)  # [T, T]
            weights = names.site_entry(site, "weights")
            for trace in self.steps:
                first, end = trace.info["rows"]
                rows = trace.read(weights, head).float().numpy()  # [rows, keys]
                full[first:end, : rows.shape[-1]] = rows
            self._maps[key] = full
        return self._maps[key]

    def map_at(self, k: int, site: str, head: int) -> np.ndarray:
        end = self.ends[k]
        return self._filled(site, head)[:end, :end]


def shown_rows(site: str, n_rows: int, upto: int) -> int | None:
    """How many rows of a decoder site's maps the timeline shows at position `upto` (ViewState.upto): rows
    0 … upto, as the generation had computed them by that step (a self-attention's keys too); None: every row
    (no timeline position, an encoder site, or a position past the run's rows)."""
    if upto < 0 or upto >= n_rows - 1 or site.split(".")[0] != "dec":
        return None
    return upto + 1


def step_positions(steps: list[Trace]) -> list[int]:
    """The decoder position each generation step computed last (the timeline's stops): a cached step's Trace
    says its rows (info['rows']); one the cache could not serve is the whole sequence (its last real token)."""
    tokens = names.side_entry("tgt", "tokens")
    return [int(t.info["rows"][1]) - 1 if "rows" in t.info else real_length(t[tokens]) - 1 for t in steps]
