"""The window of positions (present/position_range.py): default, clamping, following a position, and that the
view-models read only the window's rows with the values of those positions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.present import position_range as pr
from attnlab.present.position_range import PositionWindow


def test_every_position_shows_when_they_fit_or_are_few():
    assert pr.default_window(30, 40) == PositionWindow(0, 30, 30)
    assert pr.default_window(pr.WHOLE_UP_TO, 8).whole  # a short sentence is drawn whole even in a small panel
    assert pr.window_size(pr.WHOLE_UP_TO + 1, 8) == 8 and pr.window_size(100, 200) == 0
    assert pr.default_window(40, 40).whole
    assert pr.clamp(17, 0, 50).whole  # size 0 = all


def test_more_positions_than_fit_give_the_first_window():
    w = pr.default_window(8192, 40)
    assert (w.start, w.stop, w.size, w.whole) == (0, 40, 40, False)
    assert w.caption() == "positions 0–39 of 8,192"


@pytest.mark.parametrize(
    ("start", "expected"),
    [(-5, 0), (0, 0), (100, 100), (8152, 8152), (8153, 8152), (10**9, 8152)],
)
def test_a_window_is_clamped_inside_the_sequence(start, expected):
    w = pr.clamp(start, 40, 8192)
    assert w.start == expected and w.size == 40 and w.stop <= 8192


def test_rows_that_fit_divide_the_room_and_never_fall_below_the_minimum():
    assert pr.rows_that_fit(600, 15) == 40
    assert pr.rows_that_fit(100, 15) == pr.MIN_ROWS
    assert pr.rows_that_fit(600, 0) == pr.MIN_ROWS


def test_follow_moves_the_window_only_as_far_as_needed():
    w = pr.clamp(100, 40, 1000)
    assert pr.follow(w, 120) == w  # already inside, away from the edges
    later = pr.follow(w, 500)
    assert later.start <= 500 < later.stop and later.stop - 1 - 500 == pr.FOLLOW_MARGIN
    earlier = pr.follow(w, 50)
    assert earlier.start == 50 - pr.FOLLOW_MARGIN and earlier.size == 40
    last = pr.follow(w, -1)  # -1: the last position
    assert last.stop == 1000 and last.size == 40
    assert pr.follow(pr.clamp(0, 40, 1000), 0).start == 0  # the margin never pushes past the start


def test_moved_keeps_the_size_and_stays_inside():
    w = pr.clamp(0, 40, 100)
    assert pr.moved(w, 40) == PositionWindow(40, 80, 100)
    assert pr.moved(w, 1000) == PositionWindow(60, 100, 100)
    assert pr.moved(w, -1000) == PositionWindow(0, 40, 100)


def test_partial_windows_label_rows_with_their_positions():
    labels = [f"t{i}" for i in range(100)]
    assert pr.window_labels(labels, pr.clamp(0, 0, 100)) is labels
    assert pr.window_labels(labels, pr.clamp(50, 3, 100)) == ["50 t50", "51 t51", "52 t52"]


class _CountingTrace:
    """A mapping-like trace that records what was read whole and what by slice."""

    def __init__(self, values: dict[str, torch.Tensor], tokens: list[str]):
        self.values, self.tokens = values, tokens
        self.whole: list[str] = []
        self.sliced: list[tuple[str, object]] = []

    def get(self, name: str, default: object = None) -> object:
        return self.tokens if name == "tgt.tokens" else default

    def numpy(self, name: str) -> np.ndarray:
        self.whole.append(name)
        return self.values[name].numpy()

    def read(self, name: str, index: object) -> torch.Tensor:
        self.sliced.append((name, index))
        return self.values[name][index]  # type: ignore[index]


def test_read_rows_reads_only_the_window():
    x = torch.arange(2000 * 3, dtype=torch.float32).reshape(2000, 3)
    trace = _CountingTrace({"h": x}, [str(i) for i in range(2000)])
    window = pr.window_for(trace, "tgt", (1500, 40))  # type: ignore[arg-type]
    assert window == PositionWindow(1500, 1540, 2000)
    rows = pr.read_rows(trace, "h", window)  # type: ignore[arg-type]
    np.testing.assert_array_equal(rows, x[1500:1540].numpy())
    assert trace.whole == [] and trace.sliced == [("h", slice(1500, 1540))]
    whole = pr.read_rows(trace, "h", pr.window_for(trace, "tgt", (0, 0)))  # type: ignore[arg-type]
    assert whole.shape == (2000, 3) and trace.whole == ["h"]
