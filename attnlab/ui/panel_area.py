"""Where the stage panels live: a stack sized by the panel shown, in a scroll area.

A QStackedWidget is as large as the largest of all its pages (QStackedLayout's minimum is theirs, all together).
So the first time a wide panel was shown (the layer input's three maps need 588 px, the √dₖ explainer 626 px),
the window's minimum width grew, and a window at its minimum — a 1024×768 projector, a small laptop screen —
grew past the screen's edge. It never shrank back. The resize also relaid out the window a second time on the
next event (the banner rewrapped at the new width, then the splitter moved), a 12–23 ms repaint of the stage
one toggle after the panel appeared.

Here the stack's size hints are those of the panel shown, and a panel larger than the room it is given scrolls
inside the stage area: the window's size is the user's, whatever panel is shown.
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class CurrentPageStack(QtWidgets.QStackedWidget):
    """A QStackedWidget whose size hints are its current page's (not the largest of all its pages')."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, **kwargs):
        super().__init__(parent, **kwargs)
        self.currentChanged.connect(self.updateGeometry)  # a new page: new hints for the layout above

    def sizeHint(self) -> QtCore.QSize:
        page = self.currentWidget()
        return page.sizeHint().expandedTo(page.minimumSize()) if page is not None else super().sizeHint()

    def minimumSizeHint(self) -> QtCore.QSize:
        """The page's least size: its layout's minimum, or the minimum set on it where that is larger."""
        page = self.currentWidget()
        return page.minimumSizeHint().expandedTo(page.minimumSize()) if page is not None else super().minimumSizeHint()


def scrolling(stack: QtWidgets.QWidget) -> QtWidgets.QScrollArea:
    """`stack` in a frameless scroll area that gives it all its room and scrolls only what does not fit."""
    area = QtWidgets.QScrollArea(objectName="panelScroll", widgetResizable=True)
    area.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    area.setWidget(stack)
    return area
