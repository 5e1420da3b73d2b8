"""The window of positions a panel that lists tokens shows (issue 23: long inputs). Qt-free, the one place for it.

A panel gives readable rows only up to a point (ui/window/zoom.py's row-pixel figures say how tall a readable row
is); with more positions than that it shows the window [start, start + size) and a range control moves it.
`ViewState.positions` holds (start, size) so the window persists from stage to stage; size 0 means "all".
View-models call `window_for` and read only the window's rows from the trace (`read_rows`), so an 8,192-token
FFN panel copies [size, d_ff], never [8192, d_ff]."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace
    from attnlab.present.stage_types import Stage

MIN_ROWS = 8  # a window is never smaller than this many positions (fewer reads as a glitch, not a window)
WHOLE_UP_TO = 64  # sequences this short are always drawn whole, as before (a classroom sentence never gets a window)
FOLLOW_MARGIN = 2  # a followed position is kept this many rows inside the window's edge where it can be


@dataclass(frozen=True)
class PositionWindow:
    """Positions [start, stop) of `total`; `whole` when every position is shown."""

    start: int
    stop: int
    total: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.stop == self.total

    @property
    def rows(self) -> slice:
        return slice(self.start, self.stop)

    def caption(self) -> str:
        """'positions 4,000–4,039 of 8,192' (inclusive, as the rows are labelled)."""
        return f"positions {self.start:,}–{max(self.stop - 1, self.start):,} of {self.total:,}"


def rows_that_fit(height_px: float, row_px: float) -> int:
    """How many readable rows `height_px` pixels hold at `row_px` pixels a row (at least MIN_ROWS)."""
    if row_px <= 0:
        return MIN_ROWS
    return max(MIN_ROWS, int(height_px // row_px))


def clamp(start: int, size: int, total: int) -> PositionWindow:
    """The window of `size` positions nearest to starting at `start` that lies inside [0, total); size <= 0
    or size >= total gives every position."""
    total = max(int(total), 0)
    if size <= 0 or size >= total:
        return PositionWindow(0, total, total)
    start = min(max(int(start), 0), total - size)
    return PositionWindow(start, start + size, total)


def window_size(total: int, fit: int) -> int:
    """The positions a panel with room for `fit` readable rows shows of `total`: 0 (all of them) when they fit
    or the sequence is short (WHOLE_UP_TO), else `fit`."""
    return 0 if total <= max(fit, WHOLE_UP_TO) else fit


def default_window(total: int, fit: int) -> PositionWindow:
    """What a panel shows first: every position when they fit (or are few), else the first `fit`."""
    return clamp(0, window_size(total, fit), total)


def follow(window: PositionWindow, position: int) -> PositionWindow:
    """The window moved as little as possible so that `position` (-1: the last) lies inside it, FOLLOW_MARGIN
    rows from its edge where the sequence allows; the same window when it already does."""
    if window.whole or window.total == 0:
        return window
    pos = window.total - 1 if position < 0 else min(position, window.total - 1)
    margin = min(FOLLOW_MARGIN, (window.size - 1) // 2)
    if window.start + margin <= pos < window.stop - margin:
        return window
    start = pos - margin if pos < window.start + margin else pos + margin + 1 - window.size
    return clamp(start, window.size, window.total)


def moved(window: PositionWindow, delta: int) -> PositionWindow:
    """The window `delta` positions later (earlier when negative), clamped to the sequence."""
    return clamp(window.start + delta, window.size, window.total)


def side_length(trace: Trace, side: str) -> int | None:
    """The number of positions of `side` ("src"/"tgt"): the length of its token list (None without one)."""
    toks = trace.get(names.side_entry(side, "tokens"))
    return None if toks is None else len(toks)


def window_for(trace: Trace, side: str, positions: tuple[int, int]) -> PositionWindow | None:
    """The window of `side`'s positions that ViewState.positions = (start, size) asks for, clamped; None when
    the trace does not say how many positions the side has (the whole entry is then read)."""
    total = side_length(trace, side)
    if total is None:
        return None
    start, size = positions
    return clamp(start, size, total)


def stage_side(trace: Trace, stage: Stage) -> str:
    """The side whose positions a stage's rows are: its own side, its layer's, or for the logit lens (whose
    columns are positions) the decoder's where the run has one."""
    if stage.side:
        return stage.side
    if stage.layer:
        return names.stack_side(names.stack_of(stage.layer))
    return lens_side(trace)


def lens_side(trace: Trace) -> str:
    """The side whose positions are the lens's columns: the decoder's where the run has one."""
    return "tgt" if names.side_entry("tgt", "tokens") in trace else "src"


def stage_window(trace: Trace, stage: Stage, start: int, fit: int) -> PositionWindow | None:
    """The window of positions from `start` that a panel with room for `fit` readable rows shows for `stage`
    (None: the run has no such positions)."""
    side = stage_side(trace, stage)
    size = window_size(side_length(trace, side) or 0, fit)
    return window_for(trace, side, (start, size))


def read_rows(trace: Trace, name: str, window: PositionWindow | None) -> np.ndarray:
    """Entry `name` ([T, ...], positions first) as float32 numpy, only the window's rows read from the trace."""
    if window is None or window.whole:
        return np.asarray(trace.numpy(name), dtype=np.float32)
    return np.asarray(trace.read(name, window.rows).numpy(), dtype=np.float32)  # [size, ...]


def first_of(window: PositionWindow | None) -> int:
    """The position of the window's first row (0 without a window)."""
    return 0 if window is None else window.start


def window_labels(labels: list[str] | None, window: PositionWindow | None) -> list[str] | None:
    """The row labels of the window; a partial window puts each row's position before its label
    ('4000 cat'), so the rows say where in the sequence they are."""
    if labels is None or window is None or window.whole:
        return labels
    return [f"{window.start + i} {label}" for i, label in enumerate(labels[window.rows])]
