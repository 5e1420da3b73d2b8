"""ModelView: the whole model's attention on one screen (BertViz's "model view"). For each site kind (encoder
self-attention, decoder self-attention, cross-attention) a layers × heads grid of small heatmaps; clicking a
cell opens that head's attention weights stage.

Few graphics items, so 12 layers × 12 heads at 128 tokens stays responsive: ONE ImageItem per site kind holds
every cell, tiled with a one-pixel transparent gap between cells (the grid lines). The tiling is Qt-free
(attnlab/present/model_grid.py); each site's weights are read through `trace[name]` once per run, or for a long
input as each head's overview tiles (present/views/long_map.py), never the full maps.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from attnlab.present import words
from attnlab.present.model_grid import TOP_PERCENTILE, SiteGrid, put, site_grids, thumbnail_jobs, top_of
from attnlab.present.window_facts import site_kind
from attnlab.ui.plots.colormaps import DEFAULT_SEQUENTIAL, get_colormap
from attnlab.ui.plots.raster import QtReadyImage, rect_updates
from attnlab.ui.plots.tile_loader import TileLoader

if TYPE_CHECKING:
    from pyqtgraph.GraphicsScene.mouseEvents import MouseClickEvent

    from attnlab.present.engine_api import Trace

GRID_LINE = "#bbbbbb"
HINT = "Each small map is one head of one layer (rows: layers, columns: heads). Click one to open it."


def scale_words(top: float) -> str:
    """The bottom axis' title: the colour scale, named as the single map's colour bar names it (weight_scale)."""
    return f"head (colour scale 0 – {top:.2g}, {TOP_PERCENTILE:g}th pct)"


class ModelView(QWidget):
    """Every attention head of a run as small multiples, one grid per site kind."""

    cellClicked = Signal(str, int)  # site ("dec.3.self"), head (0-based)

    def __init__(self, parent: QWidget | None = None, colormap: str = DEFAULT_SEQUENTIAL):
        super().__init__(parent)
        self.setObjectName("modelView")
        self._scene = rect_updates(pg.GraphicsLayoutWidget())
        self._scene.setObjectName("modelViewScene")
        self._readout = QLabel(HINT)
        self._readout.setObjectName("modelViewReadout")
        self._readout.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._scene, 1)
        layout.addWidget(self._readout)
        self._colormap = get_colormap(colormap)
        self._plots: dict[str, tuple[pg.PlotItem, pg.ImageItem]] = {}
        self._grids: dict[str, SiteGrid] = {}
        self._layout_key: tuple[tuple[str, int, int, int, int], ...] = ()
        self.draw_count = 0
        self._loader = TileLoader(self)  # a long input's thumbnails, read off the GUI thread
        self._loader.ready.connect(self._thumbnail)
        self._jobs: list[tuple[str, int, int]] = []  # (kind, layer, head) of each job of the loader
        self._scene.scene().sigMouseClicked.connect(self._on_click)
        self._scene.scene().sigMouseMoved.connect(self._on_move)

    # ---- drawing -----------------------------------------------------------------------------------------
    def set_trace(self, trace: Trace) -> None:
        """Draw every site of `trace` (one read of each site's weights; a long input's thumbnails fill in as
        the TileLoader reads them off the GUI thread)."""
        grids = site_grids(trace, defer=True)
        key = tuple((kind, g.layers, g.heads, g.rows, g.cols) for kind, g in grids.items())
        if key != self._layout_key:
            self._rebuild(grids)
            self._layout_key = key
        for kind, grid in grids.items():
            plot, image = self._plots[kind]
            image.setImage(grid.image, autoLevels=False, levels=(0.0, grid.top))  # [L·(Tq+1), H·(Tk+1)]
            plot.setTitle(grid.title)  # short: a long title would set the plot's minimum width
            plot.getAxis("bottom").setLabel(scale_words(grid.top))
        self._grids = grids
        self.draw_count += 1
        jobs = [(kind, layer, head, job) for kind, g in grids.items() for layer, head, job in thumbnail_jobs(trace, g)]
        jobs = [job for job in jobs if grids[job[0]].row_step > 1 or grids[job[0]].col_step > 1]
        self._jobs = [(kind, layer, head) for kind, layer, head, _ in jobs]
        if jobs:
            self._readout.setText(f"Reading each head's overview: 0 of {len(jobs)} …")
            self._loader.start([job for *_, job in jobs])
        else:
            self._loader.cancel()

    def _thumbnail(self, generation: int, index: int, tiles: object) -> None:
        """One head's thumbnail arrived from the TileLoader: into its grid's image, redrawn."""
        if generation != self._loader.generation:
            return
        if not isinstance(tiles, np.ndarray):
            self._readout.setText(f"Could not read this run's attention thumbnails: {tiles}")
            return
        kind, layer, head = self._jobs[index]
        grid = self._grids[kind]
        put(grid, layer, head, tiles)
        if not self._loader.busy():  # every head read: the colour scale of what is shown
            for k, g in self._grids.items():
                self._grids[k] = g = replace(g, top=top_of(g.image[np.isfinite(g.image)]))
                self._plots[k][0].getAxis("bottom").setLabel(scale_words(g.top))
            self._readout.setText(HINT)
        else:
            self._readout.setText(
                f"Reading each head's overview: {len(self._jobs) - self._loader.pending} of {len(self._jobs)} …"
            )
        plot, image = self._plots[kind]
        image.setImage(self._grids[kind].image, autoLevels=False, levels=(0.0, self._grids[kind].top))

    def loading(self) -> bool:
        """Whether a long input's thumbnails are still being read."""
        return self._loader.busy()

    def clear(self) -> None:
        self._loader.cancel()
        self._scene.clear()
        self._plots, self._grids, self._layout_key = {}, {}, ()

    def _rebuild(self, grids: dict[str, SiteGrid]) -> None:
        self._scene.clear()
        self._plots = {}
        for column, (kind, grid) in enumerate(grids.items()):
            plot = self._scene.addPlot(row=0, col=column)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            view = plot.getViewBox()
            view.invertY(True)
            view.setAspectLocked(False)
            view.setMouseEnabled(False, False)
            image = QtReadyImage(axisOrder="row-major")
            image.setLookupTable(self._colormap.getLookupTable(nPts=256, alpha=False))
            plot.addItem(image)
            xs, ys = grid.gap_lines()  # one item draws every grid line (a 1-pixel NaN gap can vanish when shrunk)
            plot.addItem(pg.PlotCurveItem(xs, ys, connect="pairs", pen=pg.mkPen(GRID_LINE, width=1)))
            plot.setRange(xRange=(0, grid.image.shape[1]), yRange=(0, grid.image.shape[0]), padding=0)
            left, bottom = plot.getAxis("left"), plot.getAxis("bottom")
            left.setTicks([[(grid.row_centre(i), f"L{i + 1}") for i in range(grid.layers)], []])
            bottom.setTicks([[(grid.col_centre(h), f"H{h + 1}") for h in range(grid.heads)], []])
            left.setLabel("layer")
            self._scene.ci.layout.setColumnStretchFactor(column, 1)  # the grids share the width equally
            self._plots[kind] = (plot, image)

    # ---- reading and clicking ----------------------------------------------------------------------------
    def cell_at(self, scene_pos: QPointF) -> tuple[str, int, int, int, int] | None:
        """(site, head, query, key) under a scene position, with the site kind's layer: (site, layer, head, q, k)."""
        for kind, (plot, _image) in self._plots.items():
            view = plot.getViewBox()
            if not view.sceneBoundingRect().contains(scene_pos):
                continue
            point = view.mapSceneToView(scene_pos)
            found = self._grids[kind].locate(point.y(), point.x())
            if found is not None:
                layer, head, q, k = found
                return self._grids[kind].sites[layer], layer, head, q, k
        return None

    def scene_pos_of(self, kind: str, layer: int, head: int) -> QPointF:
        """The scene position of the centre of one cell (tests click there)."""
        plot, _image = self._plots[kind]
        grid = self._grids[kind]
        return plot.getViewBox().mapViewToScene(QPointF(grid.col_centre(head), grid.row_centre(layer)))

    def _on_click(self, event: MouseClickEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        found = self.cell_at(event.scenePos())
        if found is not None:
            site, _layer, head, _q, _k = found
            self.cellClicked.emit(site, head)
            event.accept()

    def _on_move(self, scene_pos: QPointF) -> None:
        found = self.cell_at(scene_pos)
        if found is None:
            self._readout.setText(HINT)
            return
        site, _layer, head, q, k = found
        grid = self._grids[site_kind(site)]
        value = float(grid.image[grid.row_of(_layer, q), grid.col_of(head, k)])
        if grid.row_step > 1 or grid.col_step > 1:  # a long input: the cell is a tile, its value their max
            where = f"queries {q}–{q + grid.row_step - 1} → keys {k}–{k + grid.col_step - 1}: largest"
        else:
            where = f"query {q} → key {k}:"
        self._readout.setText(
            f"{words.site_full_words(site)} · head {head + 1} · {where} {value:.3f}   (click to open this head)"
        )

    def shown_data(self) -> dict[str, np.ndarray]:
        """The tiled images by site kind (numpy), for tests."""
        return {kind: np.asarray(grid.image) for kind, grid in self._grids.items()}
