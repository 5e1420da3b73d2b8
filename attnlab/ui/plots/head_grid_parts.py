"""The pieces HeadGrid (ui/plots/head_grid.py) is made of: its input checked (`prepare_heads`), the items of one
grid placed in a pyqtgraph layout (titles and plots, axes), and the room a scroll area leaves the scene. Where
each item goes is present/head_grid_layout.py's arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnlab.present import words
from attnlab.present.head_grid_layout import bottom_axis_heads, head_slot
from attnlab.ui.plots.axes import TICK_POINT_SIZE, CategoryAxis, MaskBackground, choose_modes
from attnlab.ui.plots.matrix_data import check_labels, compute_levels, elide_label, prepare_matrix
from attnlab.ui.window import zoom

SELECTED_COLOR = "#ff9f1c"


@dataclass(frozen=True)
class Prepared:
    """HeadGrid.set_heads' input, checked: raw and displayed values, masks, the cells, labels and levels."""

    raw: np.ndarray  # [H, Tq, Tk] (a long map's overview tiles: [H, n_r, n_c])
    display: np.ndarray
    mask: np.ndarray | None
    bad: np.ndarray | None  # masked, NaN or ±inf cells
    cells: tuple[int, int]  # (Tq, Tk)
    row_labels: list[str] | None
    col_labels: list[str] | None
    levels: tuple[float, float]


def default_levels(raw: np.ndarray, bad: np.ndarray | None) -> tuple[float, float] | None:
    """0..1 when every valid value lies in [0, 1] (attention weights), else None (computed from the data)."""
    valid = raw if bad is None else raw[~bad]
    if valid.size == 0 or (float(valid.min()) >= 0.0 and float(valid.max()) <= 1.0):
        return (0.0, 1.0)
    return None


def prepare_heads(
    weights: np.ndarray,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None,
    masked: np.ndarray | None,
    levels: tuple[float, float] | None,
    symmetric: bool | None,
    cells: tuple[int, int] | None,
) -> Prepared:
    """set_heads' arguments checked (ValueError for a shape or labels that do not fit), with their levels."""
    raw, display, mask, bad = prepare_matrix(weights, masked)
    if raw.ndim != 3:
        raise ValueError(f"weights must be [H, Tq, Tk], got shape {raw.shape}")
    tq, tk = cells if cells is not None else raw.shape[1:]
    rlabels = check_labels(row_labels, tq, "row_labels")
    clabels = check_labels(col_labels, tk, "col_labels")
    if levels is None and symmetric is None:
        levels = default_levels(raw, bad)
    lo, hi = compute_levels(raw, bad, levels, symmetric)
    return Prepared(raw, display, mask, bad, (tq, tk), rlabels, clabels, (lo, hi))


@dataclass
class HeadItems:
    """Per head: its plot, image, mask background and title."""

    views: list[pg.ViewBox]
    images: list[pg.ImageItem]
    mask_bgs: list[MaskBackground]
    titles: list[pg.LabelItem]


def add_heads(ci: pg.GraphicsLayout, n_heads: int, ncols: int, new_image: Callable[[pg.ViewBox], tuple]) -> HeadItems:
    """A title and a view box (image over a mask background, made by `new_image`) per head, in their slots."""
    items = HeadItems([], [], [], [])
    for h in range(n_heads):
        title_row, plot_row, col = head_slot(h, ncols)
        lab = pg.LabelItem(words.head_words(h), size=f"{zoom.points(TICK_POINT_SIZE):g}pt")
        lab.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Fixed)
        ci.addItem(lab, row=title_row, col=col)
        vb = pg.ViewBox(enableMouse=False, enableMenu=False, invertY=True, defaultPadding=0.0)
        vb.disableAutoRange()
        ci.addItem(vb, row=plot_row, col=col)
        img, bg = new_image(vb)
        items.views.append(vb)
        items.images.append(img)
        items.mask_bgs.append(bg)
        items.titles.append(lab)
    return items


def add_axes(
    ci: pg.GraphicsLayout, views: list[pg.ViewBox], n_heads: int, nrows: int, ncols: int
) -> tuple[list[CategoryAxis], list[CategoryAxis]]:
    """(row axes, column axes): one left of each grid row, one under the lowest plot of each grid column that
    reaches the last row; the plots' rows and columns stretch, the titles' and axes' do not."""
    left, bottom = [], []
    for i in range(nrows):
        ax = CategoryAxis("left")
        ax.linkToView(views[i * ncols])
        ci.addItem(ax, row=head_slot(i * ncols, ncols)[1], col=0)
        left.append(ax)
    for j, lowest in bottom_axis_heads(n_heads, nrows, ncols):
        ax = CategoryAxis("bottom")
        ax.linkToView(views[lowest])
        ci.addItem(ax, row=2 * nrows, col=j + 1)
        bottom.append(ax)
    lay = ci.layout
    for i in range(nrows):
        lay.setRowStretchFactor(2 * i, 0)
        lay.setRowStretchFactor(2 * i + 1, 1)
    lay.setRowStretchFactor(2 * nrows, 0)
    lay.setColumnStretchFactor(0, 0)
    for j in range(ncols):
        lay.setColumnStretchFactor(j + 1, 1)
    return left, bottom


def style_head(view: pg.ViewBox, title: pg.LabelItem, head: int, selected: bool) -> None:
    """A head's plot border and title, drawn as selected or not."""
    view.setBorder(pg.mkPen(SELECTED_COLOR, width=3) if selected else None)
    title.setText(
        words.head_words(head),
        bold=selected,
        color=SELECTED_COLOR if selected else None,
        size=f"{zoom.points(TICK_POINT_SIZE):g}pt",
    )
    title.setMaximumHeight(title.minimumHeight())


def scroll_area_of(widget: QtWidgets.QWidget) -> QtWidgets.QScrollArea | None:
    """The scroll area `widget` sits in (the stage area), or None."""
    area = widget.parentWidget()
    while area is not None and not isinstance(area, QtWidgets.QScrollArea):
        area = area.parentWidget()
    return area


def room(widget: QtWidgets.QWidget, scene: QtWidgets.QWidget) -> tuple[float, float]:
    """The scene's width, and the height it has without scrolling: inside a scroll area (the stage area,
    presenting) a panel taller than the viewport is as much too tall as the floors made it, so that
    excess is not room (the arrangement never feeds on its own floor)."""
    height = float(scene.height())
    area = scroll_area_of(widget)
    inner = area.widget() if area is not None else None
    if area is not None and inner is not None:
        height -= max(0, inner.height() - area.viewport().height())
    return float(scene.width()), height


def room_below(widget: QtWidgets.QWidget, scene: QtWidgets.QWidget) -> float | None:
    """The scene's height from its top to the bottom of the stage area's viewport (the readout and notes
    below it may scroll), or None outside a scroll area or before it has a size. Not the scene's own height:
    that follows the floor."""
    area = scroll_area_of(widget)
    inner = area.widget() if area is not None else None
    if area is None or inner is None or area.viewport().height() < 50 or not inner.isAncestorOf(scene):
        return None
    return float(area.viewport().height() - scene.mapTo(inner, QtCore.QPoint(0, 0)).y())


def label_axes(
    left: list[CategoryAxis],
    bottom: list[CategoryAxis],
    rows: list[str] | None,
    cols: list[str] | None,
    cells: tuple[int, int],
) -> None:
    """Every row axis labelled `rows`, every column axis `cols` (elided), for maps of `cells` (Tq, Tk)."""
    tq, tk = cells
    rl = None if rows is None else [elide_label(s) for s in rows]
    cl = None if cols is None else [elide_label(s) for s in cols]
    for ax in left:
        ax.set_labels(rl, tq)
        ax.setWidth(ax.text_extent("labels"))
    for ax in bottom:
        ax.set_labels(cl, tk)


def set_axis_modes(
    left: list[CategoryAxis], bottom: list[CategoryAxis], plot: tuple[float, float], small: bool
) -> None:
    """How much tick text the axes show for plots of `plot` (width, height) pixels: none when `small`
    (head_grid_layout.too_small_for_ticks), else what fits (axes.choose_modes)."""
    bmode, lmode = ("none", "none") if small else choose_modes(bottom[0], left[0], *plot)
    for ax in left:
        if ax.set_mode(lmode):
            ax.setWidth(ax.text_extent("labels") if lmode != "none" else ax.text_extent("none"))
    for ax in bottom:
        if ax.set_mode(bmode):
            ax.setHeight(ax.text_extent())
