"""Is any label cut off? For every plot view inside a widget: each axis tick label and title, text item and plot label,
mapped from its scene into the view's pixels, must lie inside the view; every visible one-line QLabel must
be as wide as its text. Used by the tests (tests/ui/test_clip_check.py); returns readable offenders."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnlab.ui.plots.value_labels import ValueLabels

if TYPE_CHECKING:
    from attnlab.present.stages import Stage
    from attnlab.ui.window.main_window import MainWindow

TOLERANCE_PX = 1.0


def _axis_text_rects(axis: pg.AxisItem) -> list[tuple[str, QtCore.QRectF]]:
    """(text, rect in the axis' coordinates) of each tick label the axis draws now."""
    if not axis.isVisible() or axis.style.get("showValues") is False:
        return []
    image = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if specs is None:
        return []
    found = []
    rotated = getattr(axis, "mode", "") == "rotated" and axis.orientation in ("top", "bottom")
    metrics = QtGui.QFontMetricsF(getattr(axis, "_font", None) or axis.style.get("tickFont") or QtGui.QFont())
    for rect, _flags, text in specs[2]:
        if rotated:  # CategoryAxis.drawPicture turns the text a quarter: it runs down (bottom) or up (top)
            length, half = metrics.horizontalAdvance(text), metrics.height() / 2
            x = rect.center().x() - half
            y = rect.top() if axis.orientation == "bottom" else rect.bottom() - length
            rect = QtCore.QRectF(x, y, 2 * half, length)
        else:
            rect = _glyph_box(metrics, rect, int(_flags), text)
        found.append((text, QtCore.QRectF(rect)))
    return found


def _glyph_box(metrics: QtGui.QFontMetricsF, rect: QtCore.QRectF, flags: int, text: str) -> QtCore.QRectF:
    """Where the ink of `text` drawn in `rect` with these alignment flags lands (not the padded line box)."""
    align = QtCore.Qt.AlignmentFlag
    tight = metrics.tightBoundingRect(text)  # relative to the baseline origin
    width = metrics.horizontalAdvance(text)
    if flags & align.AlignRight.value:
        left = rect.right() - width
    elif flags & align.AlignHCenter.value:
        left = rect.center().x() - width / 2
    else:
        left = rect.left()
    if flags & align.AlignBottom.value:
        baseline = rect.bottom() - metrics.descent()
    elif flags & align.AlignTop.value:
        baseline = rect.top() + metrics.ascent()
    else:
        baseline = rect.center().y() - metrics.height() / 2 + metrics.ascent()
    return QtCore.QRectF(left + tight.left(), baseline + tight.top(), tight.width(), tight.height())


def _scene_texts(scene: QtWidgets.QGraphicsScene) -> list[tuple[str, QtCore.QRectF]]:
    """(text, scene rect) of every visible label drawn in a pyqtgraph scene."""
    found = []
    for item in scene.items():
        if not item.isVisible() or not _really_visible(item):
            continue
        if isinstance(item, pg.AxisItem):
            found += [(t, item.mapRectToScene(r)) for t, r in _axis_text_rects(item)]
            title = item.label.toPlainText().strip() if item.label.isVisible() else ""
            if title:  # the axis title ("token", "d_k dimension"), turned a quarter beside a vertical axis
                inner = item.label.document().documentMargin()  # the text, not its padding
                box = item.label.boundingRect().adjusted(inner, inner, -inner, -inner)
                found.append((title, item.label.mapRectToScene(box)))
        elif isinstance(item, pg.TextItem) and item.toPlainText().strip():
            inner = item.textItem.document().documentMargin()  # the text, not its padding
            box = item.textItem.boundingRect().adjusted(inner, inner, -inner, -inner)
            found.append((item.toPlainText().strip(), item.textItem.mapRectToScene(box)))
        elif isinstance(item, ValueLabels):
            found += [(t, r) for t, r in item.text_rects() if t]
        elif isinstance(item, pg.LabelItem) and item.text:
            found.append(
                (
                    QtGui.QTextDocumentFragment.fromHtml(item.text).toPlainText(),
                    item.item.mapRectToScene(item.item.boundingRect()),
                )
            )
    return found


def _overlaps(scene: QtWidgets.QGraphicsScene) -> list[str]:
    """Tick labels of one axis that run into each other."""
    found = []
    for axis in scene.items():
        if not isinstance(axis, pg.AxisItem) or not _really_visible(axis):
            continue
        texts = _axis_text_rects(axis)
        for (a, ra), (b, rb) in zip(texts, texts[1:], strict=False):
            common = ra.intersected(rb)
            if common.width() > 1 and common.height() > 1:
                found.append(f"'{a}' overlaps '{b}' on an axis")
    return found


def _really_visible(item: QtWidgets.QGraphicsItem) -> bool:
    while item is not None:
        if not item.isVisible() or item.opacity() == 0:
            return False
        item = item.parentItem()
    return True


def clipped_labels(root: QtWidgets.QWidget) -> list[str]:
    """One line per label that is cut off inside `root` (empty: every label fits)."""
    offenders = []
    for view in root.findChildren(QtWidgets.QGraphicsView):
        if not view.isVisibleTo(root) or view.scene() is None:
            continue
        bounds = QtCore.QRectF(view.viewport().rect()).adjusted(
            -TOLERANCE_PX, -TOLERANCE_PX, TOLERANCE_PX, TOLERANCE_PX
        )
        where = view.objectName() or type(view).__name__
        offenders += [f"{where}: {line}" for line in _overlaps(view.scene())]
        for text, scene_rect in _scene_texts(view.scene()):
            rect = view.viewportTransform().mapRect(scene_rect)
            if not bounds.contains(rect):
                offenders.append(f"{where}: '{text}' at {_box(rect)} outside the view {_box(bounds)}")
    for label in root.findChildren(QtWidgets.QLabel):
        if not label.isVisibleTo(root) or label.wordWrap() or not label.text():
            continue
        if isinstance(label.parent(), QtWidgets.QGraphicsView):
            continue
        need = label.sizeHint().width()
        if label.width() + TOLERANCE_PX < need - 2:
            offenders.append(f"QLabel '{label.text()[:40]}': {label.width()} px wide, needs {need}")
    return offenders


def _box(rect: QtCore.QRect | QtCore.QRectF) -> str:
    r = QtCore.QRectF(rect)
    return f"[{r.left():.0f}, {r.top():.0f} … {r.right():.0f}, {r.bottom():.0f}]"


# the main stages of a run, by kind, in the order a class sees them (first stage of each kind is shot)
MAIN_KINDS = ("tokens", "weights", "heads", "lines", "addnorm", "ffn", "probs")


def main_stage_keys(stages: Sequence[Stage], kinds: Sequence[str] = MAIN_KINDS, cross: bool = True) -> list[str]:
    """The first stage of each kind, plus the first cross-attention weights when the model has one."""
    keys = [next(s.key for s in stages if s.kind == kind) for kind in kinds if any(s.kind == kind for s in stages)]
    if cross:
        keys += [s.key for s in stages if s.kind == "weights" and s.site and s.site.endswith("cross")][:1]
    return keys


def shoot_stages(window: MainWindow, keys: list[str], folder: Path | None = None, tag: str = "") -> list[str]:
    """Show each stage in `window`, save the window as folder/<tag>-<key>.png (when folder is given) and
    return the clipped labels found, each line prefixed with the stage key."""
    offenders: list[str] = []
    for key in keys:
        window.session.set_stage(key)
        for _ in range(3):  # layouts settle over a few passes (axis widths follow the labels)
            QtWidgets.QApplication.processEvents()
        window.repaint()
        QtWidgets.QApplication.processEvents()
        if folder is not None:
            window.grab().save(str(folder / f"{tag}{key}.png"))
        offenders += [f"{tag}{key}: {line}" for line in clipped_labels(window.current_panel())]
        title_row = window.stage_title.parentWidget()  # the title is always placed in the window
        offenders += [
            f"{tag}{key}: {line}"
            for line in (clipped_labels(title_row) if title_row is not None else [])
            if "QLabel" in line and window.stage_title.text()[:20] in line
        ]
    return offenders
