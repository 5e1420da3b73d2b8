"""What a student sees of each matrix: screen pixels per matrix row of every heatmap a widget shows.

For every image drawn in a plot view inside a widget (the colour bars' gradients left out), the image's rectangle
is mapped from its scene into the view's pixels: pixels per row = its height there / the rows of the matrix. How
much of it lies inside a given viewport (the stage area's scroll viewport: what is on screen without scrolling)
is measured too. Used by tests/ui/test_projector_pixels.py and benchmarks/classroom_shots.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

# The floors a student at the back needs, in screen pixels per matrix row, at 1024×768 presenting (issues 26 and
# 32), at any zoom: tests/ui/test_projector_pixels.py asserts them, benchmarks/classroom_shots.py prints them.
SINGLE_HEAD_KINDS = ("scores", "scaled", "masked", "weights", "mask")  # one head's [Tq × Tk] map, and the mask
FLOORS = {**dict.fromkeys(SINGLE_HEAD_KINDS, 36.0), "heads": 16.0, "addnorm": 24.0, "post_norm": 24.0}
OTHER_FLOOR = 12.0  # positional encoding and every other matrix


def floor_of(kind: str) -> float:
    """The least pixels per row a heatmap of a stage of `kind` must be drawn at."""
    return FLOORS.get(kind, OTHER_FLOOR)


@dataclass(frozen=True)
class RowPixels:
    """One heatmap as drawn: where it is, its rows, pixels per row, and the fraction of it on screen."""

    where: str  # "PanelHeatmap 1/3", "HeadGrid head 2", …
    rows: int
    px_per_row: float
    on_screen: float  # 0..1: of the image's height, the part inside the viewport given (1.0 without one)

    def line(self) -> str:
        return f"{self.where}: {self.px_per_row:.1f} px/row × {self.rows} rows, {self.on_screen:.0%} on screen"


def _really_visible(item: QtWidgets.QGraphicsItem | None) -> bool:
    while item is not None:
        if not item.isVisible() or item.opacity() == 0:
            return False
        item = item.parentItem()
    return True


def _in_colorbar(item: QtWidgets.QGraphicsItem) -> bool:
    parent = item.parentItem()
    while parent is not None:
        if isinstance(parent, pg.ColorBarItem):
            return True
        parent = parent.parentItem()
    return False


def _owner(view: QtWidgets.QWidget, root: QtWidgets.QWidget) -> str:
    """The name of the matrix widget (LabeledHeatmap, HeadGrid, …) that holds this plot view."""
    widget: QtWidgets.QWidget | None = view
    while widget is not None and widget is not root:
        if hasattr(widget, "set_data") or hasattr(widget, "set_heads"):
            return type(widget).__name__
        widget = widget.parentWidget()
    return type(view).__name__


def row_pixels(root: QtWidgets.QWidget, viewport: QtWidgets.QWidget | None = None) -> list[RowPixels]:
    """Every visible heatmap inside `root`, in the order the views are found (left to right within a view)."""
    found: list[tuple[str, QtWidgets.QGraphicsView, pg.ImageItem]] = []
    for view in root.findChildren(QtWidgets.QGraphicsView):
        if not view.isVisibleTo(root) or view.scene() is None:
            continue
        owner = _owner(view, root)
        scene = view.scene()
        if isinstance(scene, pg.GraphicsScene):
            # a view box updates its transform just before it paints: a view scrolled out of sight has not
            # painted since its last resize, so bring it to what it will draw
            scene.prepareForPaint()
        images = [
            item
            for item in view.scene().items()
            if isinstance(item, pg.ImageItem)
            and _really_visible(item)
            and not _in_colorbar(item)
            and item.image is not None
            and item.image.ndim >= 2
        ]
        images.sort(key=lambda im: (im.sceneBoundingRect().top(), im.sceneBoundingRect().left()))
        found += [(f"{owner} {i + 1}/{len(images)}", view, im) for i, im in enumerate(images)]
    return [_measure(where, view, image, viewport) for where, view, image in found]


def _measure(
    where: str, view: QtWidgets.QGraphicsView, image: pg.ImageItem, viewport: QtWidgets.QWidget | None
) -> RowPixels:
    rows = int(image.image.shape[0] if image.axisOrder == "row-major" else image.image.shape[1])
    scene_rect = image.mapRectToScene(image.boundingRect())
    rect = view.viewportTransform().mapRect(scene_rect)  # in the view's pixels
    px = rect.height() / max(rows, 1)
    on_screen = 1.0
    if viewport is not None and rect.height() > 0:
        top_left = view.viewport().mapTo(viewport.window(), rect.topLeft().toPoint())
        shown = QtCore.QRectF(viewport.mapTo(viewport.window(), QtCore.QPoint(0, 0)), QtCore.QSizeF(viewport.size()))
        placed = QtCore.QRectF(QtCore.QPointF(top_left), rect.size())
        on_screen = max(0.0, placed.intersected(shown).height()) / rect.height()
    return RowPixels(where, rows, px, on_screen)
