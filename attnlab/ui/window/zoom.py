"""One text scale for the whole window: the app font, tick and token labels, notes, the explanation and the
stage title all read `factor()` when they are made. The window sets it (zoom × the presentation boost) and
rebuilds its panels, so a change shows at once. Kept free of widgets so every panel can import it."""

from __future__ import annotations

MIN_ZOOM, MAX_ZOOM = 0.75, 3.0
ZOOM_STEPS = (0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)  # Ctrl+= / Ctrl+− walk these
PRESENT_BOOST = 1.25  # presentation mode shows all text this much larger again

_factor = 1.0
_base_points: float | None = None  # the application font's size before any zoom, caught once


def base_points(current: float) -> float:
    """The unzoomed application font size (the first value seen; later windows share it)."""
    global _base_points
    if _base_points is None:
        _base_points = float(current)
    return _base_points


def factor() -> float:
    """The scale every text size is multiplied by now (1.0 = 100 %)."""
    return _factor


def set_factor(value: float) -> None:
    global _factor
    _factor = float(value)


def points(size: float) -> float:
    """`size` points at the current scale."""
    return size * _factor


def clamp_zoom(value: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 1.0
    if value != value:  # NaN
        return 1.0
    return min(MAX_ZOOM, max(MIN_ZOOM, value))


def step_zoom(value: float, direction: int) -> float:
    """The next zoom step above (direction > 0) or below the current value."""
    if direction > 0:
        return next((z for z in ZOOM_STEPS if z > value + 1e-6), MAX_ZOOM)
    return next((z for z in reversed(ZOOM_STEPS) if z < value - 1e-6), MIN_ZOOM)


# ---- plot floors (issue 26: the plot comes first) -------------------------------------------------------------
# In presentation mode every matrix plot keeps at least this many pixels per matrix row, times factor(): zooming in
# grows the plots with the text (the stage area scrolls when they no longer fit) and never makes a plot smaller.
# Outside presentation mode the plots share the window with the docks and the explanation, and fill what is left.
ROW_FLOOR_ATTENTION = 30.0  # one head's [Tq × Tk] map: 37.5 px per row presenting at 100 %, 56 px at 150 %
ROW_FLOOR_GRID = 21.0  # each head of the all-heads grid
ROW_FLOOR_MATRIX = 10.0  # [tokens × d] matrices side by side: add & norm, positional encoding, Q/K/V, …
ROW_FLOOR_SINGLE = 20.0  # one [tokens × d] matrix alone in its panel (embedding, context, FFN, …)
# A plot fills the room left up to FILL_HEADROOM × its floor: so from 100 % to 150 % zoom, the floor at 150 %
# is at least the largest size at 100 %, and zooming in never makes a plot smaller (the room shrinks as the text
# grows; between closer steps, 100 → 110 %, a plot that filled the room may lose a little).
FILL_HEADROOM = 1.5

_presenting = False


def set_presenting(on: bool) -> None:
    global _presenting
    _presenting = bool(on)


def presenting() -> bool:
    """Whether the window is in presentation mode (the plot floors hold only then)."""
    return _presenting


def row_floor(base: float) -> float:
    """The least pixels per matrix row a plot keeps now: `base` × factor() presenting, else 0 (fill the room)."""
    return base * _factor if _presenting else 0.0


def row_ceiling(base: float) -> float:
    """The most pixels per matrix row a plot fills now: FILL_HEADROOM × row_floor presenting, else 0 (no limit)."""
    return FILL_HEADROOM * row_floor(base)
