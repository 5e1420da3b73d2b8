"""Activation patching by hand on the Compare panel (issue 37): drag a cell of run A's heatmap onto run B's,
or right-click B's heatmap for "Patch this head / position / layer from A". Either asks, through `asked`,
for the entry shown (at the view's head) to be patched at that row's position; the main window hands it to
session_patching.patch_from_pinned. The menu's words are present/patching.py's."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QObject, Qt, Signal

from attnlab.present.patching import MENU_PARTS
from attnlab.ui.plots.heatmap import LabeledHeatmap

MIME = "application/x-attnlab-patch-row"  # a dragged cell of A: its row (the position)


class PatchGestures(QObject):
    """The drag (A onto B) and the context menu (on B) of one Compare row."""

    asked = Signal(str, str, object, object)  # entry, part ("head" | "position" | "layer" | "cell"), head, position

    def __init__(self, a: LabeledHeatmap, b: LabeledHeatmap) -> None:
        super().__init__(a)
        self.a, self.b = a, b
        self.entry = ""  # the entry both heatmaps show
        self.head = 0  # the view's head (a per-head entry shows that head)
        view = b.graphics_view()
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._menu)
        view.setAcceptDrops(True)
        # the viewports, kept: the filter must not ask a view being deleted for its viewport
        self._a_port, self._b_port = a.graphics_view().viewport(), view.viewport()
        self._b_port.setAcceptDrops(True)
        self._b_port.installEventFilter(self)
        self._a_port.installEventFilter(self)

    def show(self, entry: str, head: int) -> None:
        self.entry, self.head = entry, head

    def row_at(self, heatmap: LabeledHeatmap, point: QtCore.QPoint) -> int | None:
        """The row (position) under `point` of `heatmap`'s viewport, or None."""
        cell = heatmap.cell_at_scene_pos(heatmap.graphics_view().mapToScene(point))
        return None if cell is None else cell[0]

    def menu_for(self, row: int) -> QtWidgets.QMenu:
        """The context menu of B's row `row`: each item asks for its part of the entry from A."""
        menu = QtWidgets.QMenu(self.b)
        menu.setObjectName("patchMenu")
        for part, text in MENU_PARTS:
            action = menu.addAction(text)
            action.triggered.connect(lambda _=False, p=part: self.asked.emit(self.entry, p, self.head, row))
        return menu

    def dropped(self, row: int) -> None:
        """A cell of A dropped on B's row `row`: that head's row (or that position's row) from A."""
        self.asked.emit(self.entry, "cell", self.head, row)

    def _menu(self, point: QtCore.QPoint) -> None:
        row = self.row_at(self.b, point)
        if row is not None and self.entry:
            self.menu_for(row).exec(self.b.graphics_view().mapToGlobal(point))

    def eventFilter(self, watched: QObject, event: QtCore.QEvent) -> bool:
        kind = event.type()
        if watched is self._a_port and kind == QtCore.QEvent.Type.MouseMove:
            moved = event if isinstance(event, QtGui.QMouseEvent) else None
            if moved is not None and moved.buttons() & Qt.MouseButton.LeftButton and self.entry:
                row = self.row_at(self.a, moved.position().toPoint())
                if row is not None:
                    self._drag(row)
                    return True
        if watched is self._b_port and isinstance(event, QtGui.QDropEvent):
            if not event.mimeData().hasFormat(MIME):
                return False
            event.acceptProposedAction()
            if kind == QtCore.QEvent.Type.Drop:
                row = self.row_at(self.b, event.position().toPoint())
                if row is not None:
                    self.dropped(row)
            return True
        return False

    def _drag(self, row: int) -> None:
        data = QtCore.QMimeData()
        data.setData(MIME, QtCore.QByteArray(str(row).encode()))
        drag = QtGui.QDrag(self.a)
        drag.setMimeData(data)
        drag.exec(Qt.DropAction.CopyAction)
