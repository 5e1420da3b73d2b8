"""The numbers behind every matrix view, with no Qt: token labels made printable, the display image of a
matrix (masked and non-finite cells as NaN), colour levels, and the readout text of one value."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

# re-exported: the label rule lives in present/labels.py (the view-models use it too)
from attnlab.present.labels import MAX_LABEL_CHARS as MAX_LABEL_CHARS
from attnlab.present.labels import elide_label as elide_label
from attnlab.present.labels import printable_label as printable_label

ValueFormat = str | Callable[[float], str]


def nice_step(min_cells: float) -> int:
    """Smallest 1-2-5 integer step that is at least *min_cells*."""
    if min_cells <= 1:
        return 1
    mag = 10 ** math.floor(math.log10(min_cells))
    for mult in (1, 2, 5, 10):
        if mult * mag >= min_cells:
            return int(mult * mag)
    return int(10 * mag)


def prepare_matrix(
    matrix: object, masked: object | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Validate a 2-D (or 3-D) matrix and build its display image.

    Returns ``(raw, display, mask, bad)``: *raw* is a float32 copy of the values, *display*
    the same with masked / non-finite cells set to NaN (it *is* raw when nothing is bad),
    *mask* the boolean mask broadcast to raw's shape (or None) and *bad* the boolean array of
    cells drawn as masked (or None when there are none).
    """
    raw = np.array(matrix, dtype=np.float32, copy=True)
    mask = None
    if masked is not None:
        mask = np.asarray(masked, dtype=bool)
        if mask.shape != raw.shape:
            try:
                mask = np.broadcast_to(mask, raw.shape)
            except ValueError:
                raise ValueError(
                    f"masked has shape {mask.shape}, incompatible with the matrix shape {raw.shape}"
                ) from None
    bad = ~np.isfinite(raw)
    if mask is not None:
        bad |= mask
    if not bad.any():
        return raw, raw, mask, None
    display = raw.copy()
    display[bad] = np.nan
    return raw, display, mask, bad


def compute_levels(
    raw: np.ndarray,
    bad: np.ndarray | None,
    levels: tuple[float, float] | None = None,
    symmetric: bool | None = None,
) -> tuple[float, float]:
    """Colour levels for *raw*, ignoring *bad* cells (masked, NaN, ±inf).

    Explicit *levels* win. Otherwise min/max of the valid cells, or ±max|x| when *symmetric*
    (default: True exactly when the valid values have both signs). Always finite, lo < hi.
    """
    if levels is not None:
        lo, hi = float(levels[0]), float(levels[1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"levels must be finite, got {levels!r}")
        if lo > hi:
            lo, hi = hi, lo
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        return lo, hi
    valid = raw if bad is None else raw[~bad]
    if valid.size == 0:
        return (-1.0, 1.0) if symmetric else (0.0, 1.0)
    mn, mx = float(valid.min()), float(valid.max())
    if symmetric is None:
        symmetric = mn < 0.0 < mx
    if symmetric:
        a = max(abs(mn), abs(mx))
        if a == 0.0:
            a = 1.0
        return -a, a
    if mn == mx:
        d = 0.5 * abs(mn) if mn != 0.0 else 0.5
        return mn - d, mx + d
    return mn, mx


def format_value(value: float, fmt: ValueFormat) -> str:
    if callable(fmt):
        return fmt(value)
    return fmt.format(value)


def describe_value(value: float, is_masked: bool, fmt: ValueFormat) -> str:
    if is_masked:
        return "masked"
    if math.isnan(value):
        return "NaN (masked)"
    if math.isinf(value):
        return ("−inf" if value < 0 else "+inf") + " (masked)"
    return format_value(value, fmt)


def check_labels(labels: Sequence[object] | None, n: int, name: str) -> list[str] | None:
    """`labels` as strings, or None; a ValueError unless there is exactly one per row (or column)."""
    if labels is None:
        return None
    out = [str(s) for s in labels]
    if len(out) != n:
        raise ValueError(f"{name} has {len(out)} entries for {n} matrix {name[:3]}s")
    return out
