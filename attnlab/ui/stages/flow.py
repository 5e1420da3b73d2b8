"""FlowLayout: widgets placed left to right, wrapping onto new lines like words in a paragraph."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QPoint, QRect, QSize, Qt


class FlowLayout(QtWidgets.QLayout):
    def __init__(self, parent: QtWidgets.QWidget | None = None, spacing: int = 8):
        super().__init__(parent)
        self._items: list[QtWidgets.QLayoutItem] = []
        self._gap = spacing

    def addItem(self, item: QtWidgets.QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QtWidgets.QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QtWidgets.QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            widget = item.widget()
            if widget is None or not widget.isHidden():
                size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect: QRect, move: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_height = area.x(), area.y(), 0
        for item in self._items:
            widget = item.widget()
            if widget is not None and widget.isHidden():
                continue
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and line_height > 0:
                x, y = area.x(), y + line_height + self._gap
                line_height = 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._gap
            line_height = max(line_height, hint.height())
        return y + line_height - rect.y() + m.bottom()


def flow_container(
    parent: QtWidgets.QWidget | None = None,
) -> tuple[QtWidgets.QScrollArea, QtWidgets.QWidget, FlowLayout]:
    """A scroll area holding a widget laid out by a FlowLayout."""
    scroll = QtWidgets.QScrollArea(parent)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    inner = QtWidgets.QWidget()
    layout = FlowLayout(inner)
    layout.setContentsMargins(8, 8, 8, 8)
    scroll.setWidget(inner)
    return scroll, inner, layout
