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
