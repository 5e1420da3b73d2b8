"""The colour scale of attention weights (issue 32: colour scales for any length).

Weights lie in 0 … 1 and a short map uses that whole range. At 2,000 tokens a row's weights share 1 among 2,000
keys (the largest ≈ 0.002), so on 0 … 1 the whole map is one dark colour. When the TOP_PERCENTILE of the
weights shown is below SMALL_TOP, the scale tops out at that percentile instead (the whole-model view's rule,
present/model_grid.py), and the colour bar says so. One rule for the long single map, the heads grid and the model
view."""

from __future__ import annotations

import math

import numpy as np

TOP_PERCENTILE = 99.5  # the scale's top: this percentile of the finite weights shown
SMALL_TOP = 0.25  # below this top the 0 … 1 scale leaves most of the colours unused
SAMPLE = 1 << 16  # weights the percentile is taken over, at most
# primes: stepping through the flattened map by one of these lands on rows and columns alike (no stride lines up
# with a row's length); the first one that shares no factor with the map's size is used
STRIDES = (40_499, 40_507, 40_519, 1)  # (1: a map whose size all three divide, over 6·10¹³ cells)
MIN_KEYS = 64  # a map with fewer keys keeps 0 … 1 (its few weights are read against each other as shares of 1)


def percentile_top(finite: np.ndarray) -> float:
    """The top of the colour scale for these finite weights (TOP_PERCENTILE; 1.0 when there are none). Over more
    than SAMPLE weights, of SAMPLE of them spread over the whole map (a colour scale, on the repaint path: the
    percentile of a 1024 × 1024 map costs ~11 ms, of the sample ~1 ms)."""
    flat = finite.reshape(-1)
    if flat.size > SAMPLE:
        stride = next(p for p in STRIDES if math.gcd(p, flat.size) == 1)  # visits SAMPLE distinct cells
        flat = flat[(np.arange(SAMPLE, dtype=np.int64) * stride) % flat.size]
    top = float(np.percentile(flat, TOP_PERCENTILE)) if flat.size else 1.0
    return top if top > 0 else 1.0


def weight_scale(values: np.ndarray, keys: int) -> tuple[tuple[float, float], str]:
    """((low, high), the colour bar's name for it) for the weights `values` (any shape, last axis the keys or
    tiles of them; NaN and ±inf are not weights shown) of a map with `keys` keys: (0, 1) and "" for fewer than
    MIN_KEYS keys or while the TOP_PERCENTILE reaches SMALL_TOP, else 0 up to the TOP_PERCENTILE. The percentile,
    not the largest weight: a causal map's first rows hold weights near 1 however long the input is."""
    finite = values[np.isfinite(values)]
    if keys < MIN_KEYS or not finite.size:
        return (0.0, 1.0), ""
    top = percentile_top(finite)
    if top >= SMALL_TOP:
        return (0.0, 1.0), ""
    return (0.0, top), f"0 – {top:.2g} ({TOP_PERCENTILE:g}th pct)"
