"""Colour maps offered by the heatmap widgets.

All maps work offline: the sequential and CET maps ship with pyqtgraph, and ``RdBu_r`` is
built here from the ColorBrewer RdBu stops (blue = negative, white = 0, red = positive,
the same orientation as matplotlib's ``RdBu_r``).

Masked cells are never drawn with a colour-map colour (see ``MASK_FILL`` / ``MASK_HATCH``):
they show a hatched neutral background through transparent pixels.
"""

from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg

#: Perceptually uniform sequential maps (good for attention weights in [0, 1]).
SEQUENTIAL: list[str] = ["viridis", "magma", "inferno", "plasma", "cividis", "turbo"]
#: Diverging maps, centred on 0 (good for scores, activations, weights with both signs).
DIVERGING: list[str] = ["CET-D1", "CET-D1A", "RdBu_r"]
#: Everything offered in the UI, sequential first.
COLORMAPS: list[str] = SEQUENTIAL + DIVERGING

DEFAULT_SEQUENTIAL = "viridis"
DEFAULT_DIVERGING = "CET-D1"

#: Background and hatch colours of masked / non-finite cells (neutral, hatched).
MASK_FILL = (96, 96, 96)
MASK_HATCH = (200, 200, 200)

# ColorBrewer RdBu (11 classes), listed from the negative (blue) end to the positive (red) end.
_RDBU_R_STOPS = [
    "#053061",
    "#2166ac",
    "#4393c3",
    "#92c5de",
    "#d1e5f0",
    "#f7f7f7",
    "#fddbc7",
    "#f4a582",
    "#d6604d",
    "#b2182b",
    "#67001f",
]


def is_diverging(name: str) -> bool:
    """True for maps meant for signed data centred on zero."""
    return name in DIVERGING or name.startswith("CET-D")


@functools.lru_cache(maxsize=64)
def _load(name: str) -> pg.ColorMap | None:
    if name == "RdBu_r":
        colors = [pg.mkColor(c) for c in _RDBU_R_STOPS]
        return pg.ColorMap(np.linspace(0.0, 1.0, len(colors)), colors, name="RdBu_r")
    try:
        cmap = pg.colormap.get(name)
    except Exception:  # unknown name, missing resource file, optional backend absent...
        return None
    return cmap if isinstance(cmap, pg.ColorMap) else None


def get_colormap(name: str | None, fallback: str = DEFAULT_SEQUENTIAL) -> pg.ColorMap:
    """Return the pyqtgraph ColorMap called *name*; unknown names give *fallback* (then viridis).

    Never raises and never touches the network. Returned objects are cached and shared:
    do not modify them.
    """
    for candidate in (name, fallback, DEFAULT_SEQUENTIAL):
        if candidate:
            cmap = _load(str(candidate))
            if cmap is not None:
                return cmap
    # pyqtgraph resources missing entirely: a plain grey ramp still works.
    return pg.ColorMap([0.0, 1.0], [(0, 0, 0), (255, 255, 255)], name="grey")


def lookup_table(name: str | None, n: int = 256) -> np.ndarray:
    """uint8 RGBA look-up table with *n* entries for the map *name* (with fallback)."""
    return get_colormap(name).getLookupTable(nPts=n, alpha=True)
