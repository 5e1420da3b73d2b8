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


# ---- plot sizes presenting (issue 26: the plot comes first) --------------------------------------------------
# In presentation mode every matrix plot is drawn at this many pixels per matrix row × factor() × screen_scale():
# zooming in grows the plots with the text at every step (the stage area scrolls when they no longer fit), and a
# larger screen grows them with it. At 1024×768 and 100 % these sizes fill the room each panel has. Outside
# presentation mode the plots share the window with the docks and the explanation, and fill what is left.
ROW_PX_ATTENTION = 32.0  # one head's [Tq × Tk] map (and the mask): 40 px per row presenting at 100 %, 60 at 150 %
ROW_PX_GRID = 30.0  # each head of the all-heads grid (while every head fits the stage area without scrolling)
GRID_LEAST_PX = 16.0  # ...and it shrinks no further than this many screen pixels per row, at any zoom (issue 32)
ROW_PX_SINGLE = 30.0  # one [tokens × d] matrix alone in its panel (embedding, context, concat, W_O output)
ROW_PX_MATRIX = 15.0  # [tokens × d] matrices side by side (Q/K/V, embedding + PE, FFN, norm comparison)
ROW_PX_POSITIONAL = 13.0  # the positional encoding over its curves
ROW_PX_ADDNORM = 20.0  # add & norm: three maps over two bar charts
SCREEN = (1024, 768)  # the screen the sizes above are for

_presenting = False
_screen_scale = 1.0


def set_presenting(on: bool) -> None:
    global _presenting
    _presenting = bool(on)


def presenting() -> bool:
    """Whether the window is in presentation mode (the plot sizes hold only then)."""
    return _presenting


def set_screen_scale(width: int, height: int) -> bool:
    """Presenting in a window of width × height: plots grow by how much larger than SCREEN it is (never below
    1). True when the scale changed (the panels must be made again)."""
    global _screen_scale
    scale = max(1.0, min(width / SCREEN[0], height / SCREEN[1]))
    changed = abs(scale - _screen_scale) > 0.02
    if changed:
        _screen_scale = scale
    return changed


def screen_scale() -> float:
    return _screen_scale


def row_floor(base: float) -> float:
    """The pixels per matrix row a plot is drawn at now: `base` × factor() × screen_scale() presenting, else 0
    (no floor: fill the room)."""
    return base * _factor * _screen_scale if _presenting else 0.0


def row_least(px: float) -> float:
    """`px` screen pixels per row on SCREEN, × screen_scale() presenting (a floor that does not grow with the
    zoom: a plot may shrink to it to keep what must be seen together on screen), else 0."""
    return px * _screen_scale if _presenting else 0.0


def row_ceiling(base: float) -> float:
    """The most pixels per matrix row a plot takes now: its size presenting (row_floor), else 0 (no limit)."""
    return row_floor(base)
