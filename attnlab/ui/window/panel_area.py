"""Where the stage panels live: a stack sized by the panel shown, in a scroll area.

A QStackedWidget is as large as the largest of all its pages (QStackedLayout's minimum is theirs, all together).
So the first time a wide panel was shown (the layer input's three maps need 588 px, the √dₖ explainer 626 px),
the window's minimum width grew, and a window at its minimum — a 1024×768 projector, a small laptop screen —
grew past the screen's edge. It never shrank back. The resize also relaid out the window a second time on the
next event (the banner rewrapped at the new width, then the splitter moved), a 12–23 ms repaint of the stage
one toggle after the panel appeared.

Here the stack's size hints are those of the panel shown, and a panel wider than the room it is given scrolls
sideways inside the stage area: the window's width is the user's, whatever panel is shown. Its height is kept
whole, as before (the stage area's minimum is the panel's), except in presentation mode: there the plots keep
their least pixels per row (zoom.row_floor) and a panel taller than the screen scrolls up and down instead of
growing the window past the screen's edge.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets


class CurrentPageStack(QtWidgets.QStackedWidget):
    """A QStackedWidget whose size hints are its current page's (not the largest of all its pages')."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, **kwargs: Any):  # Qt properties by name
        super().__init__(parent, **kwargs)
        self.currentChanged.connect(self.updateGeometry)  # a new page: new hints for the layout above

    def sizeHint(self) -> QtCore.QSize:
        page = self.currentWidget()
        return page.sizeHint().expandedTo(page.minimumSize()) if page is not None else super().sizeHint()

    def minimumSizeHint(self) -> QtCore.QSize:
        """The page's least size: its layout's minimum, or the minimum set on it where that is larger."""
        page = self.currentWidget()
        return page.minimumSizeHint().expandedTo(page.minimumSize()) if page is not None else super().minimumSizeHint()


MIN_KEPT_HEIGHT = 160  # the least height of the stage area when the screen is too small for the whole panel


class PanelScroll(QtWidgets.QScrollArea):
    """A frameless scroll area that gives the panel stack all its room and scrolls sideways what does not fit.

    Its minimum height is the panel's own (and a horizontal scroll bar's): the splitter below it keeps the
    panel whole, as before, and gives the explanation what is left. A scroll area's own minimum is a few pixels,
    and in presentation mode on a 1024×768 screen the explanation then took the room of the panel's last rows."""

    def __init__(self, stack: QtWidgets.QWidget):
        super().__init__(widgetResizable=True)
        self._whole_height = True  # the panel's least height is this area's (False: it scrolls)
        self._measuring = False  # inside _screen_room
        self.setObjectName("panelScroll")
        self.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        # a click on a panel's background leaves the focus where it was, as before there was a scroll area (a
        # focused scroll area would take ↑ / ↓ from the window; its bar scrolls with the mouse)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.setWidget(stack)
        self._told = QtCore.QSize()  # the minimum the layout above was last told
        self._whole_height = True  # the panel's least height is the stage area's (False: it scrolls)
        # the stack's geometry changes reach the viewport (its parent), not this widget's layout: pass them on
        self.viewport().installEventFilter(self)

    def set_whole_height(self, whole: bool) -> None:
        """True: the panel's least height is this area's (the window keeps it whole); False (presenting): a
        panel taller than the room scrolls up and down."""
        if whole != self._whole_height:
            self._whole_height = whole
            # presenting, the panel gets the viewport's height, or its least height and a scroll bar; a
            # resizable widget would get its preferred height for its width (its plots at their largest)
            self.setWidgetResizable(whole)
            self.updateGeometry()
            self._fit_stack()

    def _fit_stack(self) -> None:
        """Not resizable (presenting): the stack as large as the viewport, or as its least size where larger."""
        stack = self.widget()
        if self._whole_height or stack is None:
            return
        least = stack.minimumSizeHint().expandedTo(stack.minimumSize())
        size = self.viewport().size().expandedTo(least)
        if size != stack.size():
            stack.resize(size)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_stack()

    def minimumSizeHint(self) -> QtCore.QSize:
        if self._measuring:
            return self._told
        self._told = self._least()
        return self._told

    def _least(self) -> QtCore.QSize:
        hint = super().minimumSizeHint()
        stack = self.widget()
        if stack is None or not self._whole_height:
            return hint
        height = stack.minimumSizeHint().height() + self.horizontalScrollBar().sizeHint().height()
        cap = self._screen_room()
        if cap is not None and height > cap:  # kept whole only while the window still fits its screen
            height = max(cap, MIN_KEPT_HEIGHT)
        return QtCore.QSize(hint.width(), max(hint.height(), height))

    def _screen_room(self) -> int | None:
        """The most height this area may ask for without growing its window past the screen's available
        height (a 1024×768 projector): the screen less the window's frame and everything else's least height.
        None while that cannot be known (no window or screen yet, or asked again while measuring it)."""
        window = self.window()
        screen = window.screen() if window is not self else None
        if screen is None or self._measuring:
            return None
        self._measuring = True  # the window's hint asks this area again: it answers what it told last
        try:
            others = window.minimumSizeHint().height() - self._told.height()
        finally:
            self._measuring = False
        frame = max(0, window.frameGeometry().height() - window.height())
        return screen.availableGeometry().height() - frame - others

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        # a class test first: most events here are paints, and reading event.type() makes a Python enum
        if type(event) is QtCore.QEvent and event.type() == QtCore.QEvent.Type.LayoutRequest:
            if self._least() != self._told:  # a new panel, or one that needs other room
                self.updateGeometry()  # the layout above asks minimumSizeHint again
            self._fit_stack()
        return super().eventFilter(watched, event)
