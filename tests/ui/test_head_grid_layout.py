"""The all-heads grid's layout arithmetic (present/head_grid_layout.py), without a widget: which arrangement it
keeps, where each head, title and axis goes, and how tall the scene is when presenting."""

from __future__ import annotations

import math

import pytest

from attnlab.present import head_grid_layout as layout

NOTHING_AROUND = (0.0, 0.0, 0.0, 0.0)


def test_before_the_scene_has_room_the_grid_keeps_its_arrangement_or_takes_the_square_one():
    assert layout.arrangement(8, (5, 5), None, NOTHING_AROUND, (1, 8), 8) == (1, 8)  # same heads: kept
    assert layout.arrangement(9, (5, 5), None, NOTHING_AROUND, (1, 8), 8) == (3, 3)  # new count: ceil(sqrt(9))
    assert layout.arrangement(6, (5, 5), (40, 900), NOTHING_AROUND, (0, 0), 0) == (2, 3)  # 40 px wide: no room yet


def test_a_new_arrangement_must_make_the_cells_noticeably_larger():
    cells, shown = (10, 10), (2, 2)
    # 4 heads of 10 × 10 with nothing around: 1×4 in a room of w × 400 gives cells of min(w/40, 40); 2×2 gives
    # min(w/20, 20), which is 20 once w >= 400; 1×4 beats it by the switch gain once w/40 > 20 * SWITCH_GAIN
    just_better = 40 * 20 * (1 + layout.SWITCH_GAIN) / 2  # between 20 and 20 * SWITCH_GAIN times larger
    clearly_better = 40 * 20 * layout.SWITCH_GAIN + 40
    assert layout.best_grid_shape(4, cells, (just_better, 400), NOTHING_AROUND) == (1, 4)
    assert layout.arrangement(4, cells, (just_better, 400), NOTHING_AROUND, shown, 4) == shown
    assert layout.arrangement(4, cells, (clearly_better, 400), NOTHING_AROUND, shown, 4) == (1, 4)
    # another head count takes the best at once
    assert layout.arrangement(4, cells, (just_better, 400), NOTHING_AROUND, shown, 8) == (1, 4)


def test_what_is_not_cells_leaves_exactly_the_room_the_cells_get():
    around = layout.Around(left=30, bar=40, bottom=25, title=14, line=12)
    per_head = around.per_head()
    room, shape, cells = (900.0, 700.0), (2, 3), (7, 9)
    width, height = layout.cell_size(shape, cells, room, per_head)
    fixed_w, fixed_h, col_w, row_h = per_head
    assert fixed_w > around.left + around.bar and fixed_h > around.bottom  # the gaps count too
    assert math.isclose(fixed_w + shape[1] * (col_w + cells[1] * width), room[0])
    assert math.isclose(fixed_h + shape[0] * (row_h + cells[0] * height), room[1])
    guessed = layout.Around.guessed(10)
    assert guessed.left > 0 and guessed.title > guessed.line  # a guess before the grid exists is never nothing


@pytest.mark.parametrize("n_heads", [1, 3, 5, 7, 8, 12])
def test_every_head_has_its_own_slot_and_every_column_axis_sits_under_the_last_row(n_heads):
    nrows, ncols = layout.grid_shape(n_heads)
    slots = [layout.head_slot(h, ncols) for h in range(n_heads)]
    assert len(set(slots)) == n_heads
    for title_row, plot_row, col in slots:
        assert plot_row == title_row + 1 and 1 <= col <= ncols  # column 0 holds the row axes
    last_plot_row = 2 * nrows - 1
    axes = layout.bottom_axis_heads(n_heads, nrows, ncols)
    assert all(layout.head_slot(h, ncols)[1] == last_plot_row for _j, h in axes)
    assert len(axes) == n_heads - (nrows - 1) * ncols  # the heads of the last grid row, one axis each


def test_an_empty_slot_gets_no_column_axis():
    # 5 heads in 2 × 3: the last row holds heads 3 and 4; column 2 ends with head 2 in the first row
    assert layout.bottom_axis_heads(5, 2, 3) == [(0, 3), (1, 4)]


def test_small_plots_show_no_tick_text():
    least_w, least_h = layout.MIN_TICKED_PLOT_PX
    assert not layout.too_small_for_ticks(2 * least_w, 2 * least_h, (2, 2))
    assert layout.too_small_for_ticks(2 * least_w - 1, 2 * least_h, (2, 2))
    assert layout.too_small_for_ticks(2 * least_w, 2 * least_h - 1, (2, 2))


def test_outside_presentation_the_scene_has_no_floor():
    assert layout.scene_heights(0.0, 16.0, 40, 100.0, 600.0) == (layout.LEAST_SCENE_PX, layout.NO_MOST)


@pytest.mark.parametrize("room_below", [None, 2000.0, 900.0, 700.0, 300.0])
def test_presenting_the_scene_keeps_the_floor_or_shrinks_to_keep_every_head_on_screen(room_below):
    floor, least_floor, rows, around = 20.0, 16.0, 40, 100.0
    least, most = layout.scene_heights(floor, least_floor, rows, around, room_below)
    assert least == most  # presenting, the rows are exactly as tall as chosen
    per_row = (least - around) / rows
    assert least_floor <= per_row <= floor + 1 / rows  # never above the floor, never below the least
    if room_below is None or room_below >= rows * floor + around:
        assert per_row >= floor  # room enough (or no scroll area): the whole floor
    elif room_below >= rows * least_floor + around:
        assert least <= room_below  # every head stays on screen
    else:
        assert per_row == least_floor  # no room even at the least: the least, and it scrolls
