"""The score maps, the mask and the heads grid of a long input (more than long_map.LONG_SIDE tokens a side):
view-models that carry a `MapSource` and an overview instead of the whole [Tq, Tk] map of every head."""

from __future__ import annotations

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.stages import FIXED_SCORE_RANGE, ViewState
from attnlab.present.views.long_map import LONG_SIDE, MapPiece, MapSource, map_source
from attnlab.present.views.model import MatrixView
from attnlab.present.views.site import SiteView
from attnlab.present.weight_scale import weight_scale

LONG_NOTE = (
    " A long input: {tq:,} × {tk:,} cells, drawn as an overview where each pixel shows the largest value of its "
    "block of cells. Zoom in with the mouse wheel (drag to pan): the exact cells appear, with token labels once "
    "they fit; the readout always gives the exact value under the mouse."
)


def long_note(text: str, shape: tuple[int, int]) -> str:
    """The map's sentence, with what the overview is (the spread and row sums of the whole map are not read)."""
    return text + LONG_NOTE.format(tq=shape[0], tk=shape[1])


def overview_levels(piece: MapPiece, kind: str, display: ViewState) -> tuple[float, float] | None:
    """Colour levels of a long map: weight_scale for weights (0 … 1, or a percentile top when the weights are
    small), 0 … 1 for the mask; for the scores ±FIXED_SCORE_RANGE with "fixed", else
    ±max |x| over the overview's finite tiles (the tiles are maxima: the most negative scores are not in them)."""
    if kind == "weights":
        return weight_scale(piece.values, piece.values.shape[-1] * piece.col_step)[0]  # long_matrix: with its name
    if kind == "mask":
        return (0.0, 1.0)
    if display.colour_scale == "fixed":
        return (-FIXED_SCORE_RANGE, FIXED_SCORE_RANGE)
    finite = piece.values[np.isfinite(piece.values)]
    peak = float(np.abs(finite).max()) if finite.size else 0.0
    return (-peak, peak) if peak > 0 else None


def long_matrix(
    trace: Trace, sv: SiteView, kind: str, title: str, display: ViewState, defer: bool = False
) -> MatrixView:
    """A MatrixView of head sv.head's map `kind` ("mask": the allowed cells) carrying its source; `matrix` is
    its overview of at most LONG_SIDE tiles a side, `masked` that overview's wholly blocked tiles. `defer`: a
    map not read before is not read here (NaN tiles; the widget reads it off the GUI thread)."""
    mask = kind == "mask"
    source = map_source(trace, sv.site, kind, None if mask else sv.head, allowed=mask)
    ready = not defer or mask or source.ready()
    piece = source.overview(LONG_SIDE, LONG_SIDE) if ready else source.placeholder(LONG_SIDE, LONG_SIDE)
    levels, scale = (
        weight_scale(piece.values, sv.tk) if kind == "weights" else (overview_levels(piece, kind, display), "")
    )
    return MatrixView(
        names.site_entry(sv.site, kind),
        np.ascontiguousarray(piece.values, dtype=np.float32),
        sv.rows,
        sv.cols,
        title,
        symmetric=None if kind in ("weights", "mask") else True,
        masked=piece.masked,
        levels=levels,
        axes=(sv.query_axis, sv.key_axis),
        source=source,
        scale_label=scale,
    )


def head_sources(trace: Trace, site: str, n_heads: int) -> list[MapSource]:
    """One weights source per head of `site` (the heads grid and the model view read their tiles from these)."""
    return [map_source(trace, site, "weights", h) for h in range(n_heads)]
