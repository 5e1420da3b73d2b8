"""LongMapHeatmap: what LabeledHeatmap does with a long map (present/views/long_map.py's MapSource).

`set_source` draws the overview sized to the view's pixels (long_map_view.py keeps the level-of-detail state:
zoom and pan, the exact window, the background read of a map not read before); a resize pools a new overview
from the kept tiles; a zoom or pan refreshes the tick modes and the exact cells. A mixin of LabeledHeatmap
(heatmap.py), kept apart so that each file reads in one sitting; the names it uses from the heatmap are
declared below for the type checker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnlab.present.weight_scale import weight_scale
from attnlab.ui.plots.axes import MaskBackground, name_scale
from attnlab.ui.plots.long_map_view import LongMapDetail
from attnlab.ui.plots.matrix_data import check_labels, compute_levels, prepare_matrix

if TYPE_CHECKING:
    import numpy as np

    from attnlab.present.views.long_map import MapPiece, MapSource


class LongMapHeatmap:
    """The long-map half of LabeledHeatmap (see the module docstring)."""

    if TYPE_CHECKING:  # LabeledHeatmap's (and MatrixView's) own, used here
        _lod: LongMapDetail | None
        _source: MapSource | None
        _source_levels: tuple[tuple[float, float] | None, bool | None]
        _vb: pg.ViewBox
        _bar: pg.ColorBarItem
        _image: pg.ImageItem
        _mask_bg: MaskBackground
        _stack: QtWidgets.QStackedWidget
        _view: pg.GraphicsLayoutWidget
        _raw: np.ndarray | None
        _mask: np.ndarray | None
        _bad: np.ndarray | None
        _levels: tuple[float, float] | None

        def _apply_colormap(self) -> None: ...
        def _show_levels(
            self, images: Sequence[pg.ImageItem], display: np.ndarray, bar: pg.ColorBarItem | None, lo: float, hi: float
        ) -> None: ...
        def _show_cells(self, rows: int, cols: int, rlabels: list[str] | None, clabels: list[str] | None) -> None: ...
        def _set_title(self, title: str) -> None: ...
        def _refresh_axis_modes(self, *_: object) -> None: ...

    def set_source(
        self,
        source: MapSource,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
        *,
        title: str = "",
        levels: tuple[float, float] | None = None,
        symmetric: bool | None = None,
    ) -> None:
        """Show a long map read from *source* with level of detail (long_map_view.py): an overview sized to the
        view's pixels, exact cells once zoomed in; labels are one per row / column of the whole map."""
        if self._lod is None:
            self._lod = LongMapDetail(self._vb, self._bar, self._image)
            self._lod.loader.ready.connect(self._map_read)
        piece = self._lod.overview_for(source)
        raw, display, mask, bad = prepare_matrix(piece.values, piece.masked)
        rows, cols = source.shape
        rlabels = check_labels(row_labels, rows, "row_labels")
        clabels = check_labels(col_labels, cols, "col_labels")
        self._source, self._source_levels = source, (levels, symmetric)
        lo, hi = self._levels = self._levels_for(raw, bad)
        self._apply_colormap()
        self._show_overview(piece)
        self._show_cells(rows, cols, rlabels, clabels)
        self._lod.start(source, piece, (lo, hi))
        if not self._lod.has_read(source):
            self._lod.read_later(source)
        self._set_title(title)
        if self._stack.currentWidget() is not self._view:
            self._stack.setCurrentWidget(self._view)
        self._refresh_axis_modes()

    def _show_overview(self, piece: MapPiece) -> None:
        """Draw a long map's overview tiles at the levels set, each stretched over its cells."""
        assert self._lod is not None and self._levels is not None
        raw, display, mask, bad = prepare_matrix(piece.values, piece.masked)
        self._raw, self._mask, self._bad = raw, mask, bad  # the overview's tiles
        self._lod.overview = piece
        self._show_levels([self._image], display, self._bar, *self._levels)
        self._lod.place_overview(self._image, piece)
        if (bad is not None) != self._mask_bg.isVisible():
            self._mask_bg.setVisible(bad is not None)

    def _map_read(self, generation: int, _index: int, _value: object) -> None:
        """A long map not read before has been read (off the GUI thread): its overview at the view's size."""
        lod, source = self._lod, self._source
        if lod is None or source is None or generation != lod.loader.generation or not lod.has_read(source):
            return
        piece = lod.overview_for(source)
        raw, _display, _mask, bad = prepare_matrix(piece.values, piece.masked)
        self._levels = self._levels_for(raw, bad)
        self._apply_colormap()
        lod.set_levels(*self._levels)
        self._show_overview(piece)
        self._overview_shown()

    def _levels_for(self, raw: np.ndarray, bad: np.ndarray | None) -> tuple[float, float]:
        """The colour levels of the overview `raw`: a head's weights on weight_scale's scale, named on the colour
        bar (decided here, once the tiles are read: a map read late came as NaN placeholders), else as set."""
        source = self._source
        if source is not None and source.weights:
            levels, label = weight_scale(raw, source.shape[1])
            name_scale(self._bar, label)
            return levels
        return compute_levels(raw, bad, *self._source_levels)

    def _overview_shown(self) -> None:
        """A long map's overview was drawn again (read late, or resized): for subclasses that keep a record."""

    def loading(self) -> bool:
        """Whether a long map is being read for its overview."""
        return self._lod is not None and self._lod.loader.busy()

    def _resized(self, *_: object) -> None:
        """A long map's view changed size: an overview sized to the new pixels (pooled from the kept tiles)."""
        lod, source = self._lod, self._source
        if lod is None or source is None or lod.overview is None:
            return
        piece = lod.overview_for(source)
        if (piece.row_step, piece.col_step) != (lod.overview.row_step, lod.overview.col_step):
            self._show_overview(piece)
            self._overview_shown()
        lod.schedule()

    def source(self) -> MapSource | None:
        """The long map shown now (None: an ordinary matrix)."""
        return self._source

    def detail(self) -> LongMapDetail | None:
        """The level-of-detail state of a long map (None before the first one)."""
        return self._lod

    def _range_changed(self, *_: object) -> None:
        """A long map zoomed or panned: tick labels for the cells now in view, exact cells once they fit."""
        if self._source is not None and self._lod is not None:
            self._refresh_axis_modes()
            self._lod.schedule()
