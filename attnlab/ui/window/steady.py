"""SteadyHeight: a word-wrapped label whose height does not follow every change of its text.

A wrapped QLabel is as tall as its text needs. When a toggle adds or drops a line of it (a residual-off sentence,
an untrained-run reason in the banner, a longer stage title), the layout moves everything below it, and every
plot in the panel is resized and repainted in full: a 5 ms update becomes a 20–40 ms one. SteadyHeight keeps
the label's minimum height at the tallest text it has shown at the current width (grow-only), so a toggle that
flips between a short and a long text re-lays out the window once, not on every toggle. When the label's width
changes (the window or a dock was resized, a relayout is happening anyway) it starts again from the tallest of
the last few texts it showed, measured at the new width (a toggle flipped back and forth before the resize moves
nothing after it either); when its font changes (zoom) it starts from the current text's own height.

Grow-only still moves the layout once: the first time a toggle shows a longer text (the residual-off sentence,
a wrapped title). Where the texts a toggle switches between are known, give them as `alternatives`: the height
is then the tallest of them from the start, and the first toggle moves nothing either.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets


def steady_height(label: QtWidgets.QLabel, width: int, current: int, same_width: bool, reserved: int) -> int:
    """The rule SteadyHeight and SteadyBox share: the height `label`'s text needs at `width`, at least
    `reserved`, and at the width fitted last never less than `current` (grow-only; a new width starts again)."""
    need = label.heightForWidth(width) if label.text() else 0
    return max(current if same_width else reserved, need, reserved)


class TextHeights:
    """The height `label` would need for each of some other texts at a width, measured on a hidden twin
    label of the same font and format (the label itself keeps its text). Cached per width, font and texts:
    a toggle asks again at the same width and finds the answer. It also keeps the last RECENT distinct texts
    the label showed (`shown`), which a new width makes room for."""

    RECENT = 8

    def __init__(self, label: QtWidgets.QLabel):
        self._label = label
        self._twin: QtWidgets.QLabel | None = None
        self._cache: dict[tuple, int] = {}
        self.recent: tuple[str, ...] = ()

    def shown(self, text: str) -> None:
        """Remember `text` among the last RECENT distinct texts shown (the oldest goes first)."""
        if text and text not in self.recent:
            self.recent = (*self.recent, text)[-self.RECENT :]

    def forget(self) -> None:
        self.recent = ()

    def tallest(self, texts: tuple[str, ...], width: int) -> int:
        if not texts or width <= 1:
            return 0
        label = self._label
        key = (width, texts, label.font().key())
        height = self._cache.get(key)
        if height is None:
            twin = self._twin
            if twin is None:
                twin = self._twin = QtWidgets.QLabel()
                twin.setObjectName(label.objectName())  # the same style rules
                twin.ensurePolished()
                twin.setWordWrap(label.wordWrap())
                twin.setTextFormat(label.textFormat())
                twin.setContentsMargins(label.contentsMargins())
                twin.setMargin(label.margin())
                twin.setIndent(label.indent())
            twin.setFont(label.font())
            heights = []
            for text in texts:
                twin.setText(text)
                heights.append(twin.heightForWidth(width) if text else 0)
            height = max(heights)
            if len(self._cache) > 64:  # widths seen while a window is dragged wider: keep the recent ones
                self._cache.clear()
            self._cache[key] = height
        return height


def least_height(
    heights: TextHeights, text: str, alternatives: tuple[str, ...], width: int, same_width: bool, reserved: int
) -> int:
    """The least height SteadyHeight and SteadyBox give at `width`: room for the tallest alternative and, at a
    new width, for the tallest of the recent texts too (the current width's grow-only height covers them).
    Notes `text` as shown."""
    heights.shown(text)
    texts = alternatives if same_width else alternatives + heights.recent
    return max(reserved, heights.tallest(texts, width))


class SteadyHeight(QtCore.QObject):
    """Keeps `label`'s minimum height grow-only at its current width; call `fit()` after each setText."""

    def __init__(self, label: QtWidgets.QLabel, reserved: int = 0):
        super().__init__(label)
        self._label = label
        self.reserved = reserved  # the least height in pixels (e.g. room for 3 lines from the start)
        self.alternatives: tuple[str, ...] = ()  # other texts a toggle may show: room for the tallest
        self._heights = TextHeights(label)
        self._fitted_width = -1
        label.setMinimumHeight(reserved)
        label.installEventFilter(self)

    def fit(self) -> None:
        """Grow the minimum height to the text's need at the current width (never shrink at the same width)."""
        label = self._label
        width = label.width()
        if width <= 1:
            return
        same_width = width == self._fitted_width
        if not same_width:  # a QLabel measures itself no shorter than its minimum: drop the old one first
            label.setMinimumHeight(self.reserved)
        least = least_height(self._heights, label.text(), self.alternatives, width, same_width, self.reserved)
        height = steady_height(label, width, label.minimumHeight(), same_width, least)
        self._fitted_width = width
        if height != label.minimumHeight():
            label.setMinimumHeight(height)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        # a class test first: most events here are paints, and reading event.type() makes a Python enum
        if isinstance(event, QtGui.QResizeEvent):
            if self._label.width() != self._fitted_width:
                self.fit()
        elif type(event) is QtCore.QEvent and event.type() == QtCore.QEvent.Type.FontChange:
            self._fitted_width = -1  # a new font (zoom, presentation mode): start again from this text's height
            self._heights.forget()
            self.fit()
        return False


class SteadyBox(QtWidgets.QWidget):
    """A word-wrapped label in a box of its own, at the tallest height its texts have needed at the current
    width (grow-only, as SteadyHeight), with no layout inside the box.

    A label's new text asks its parent to lay out again. With SteadyHeight that parent holds the window's
    layout, which then lays out everything below the label although no size changes: about 1 ms per toggle
    for the banner, whose reasons change with most toggles. Here the request reaches this box, which has no
    layout, and ends; only a text taller than any before at this width, a new width or a new font changes
    the box's fixed height and lays out the window. Show and hide the box, not the label."""

    def __init__(self, label: QtWidgets.QLabel, reserved: int = 0):
        super().__init__(label.parentWidget())
        label.setParent(self)
        label.show()
        self.label = label
        self.reserved = reserved
        self.alternatives: tuple[str, ...] = ()  # other texts the label may show: room for the tallest
        self._heights = TextHeights(label)
        self._fitted_width = -1
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setFixedHeight(reserved)
        label.installEventFilter(self)

    def fit(self) -> None:
        """Grow the box to the label's need at the current width (at a new width, start from that need)."""
        width = self.width()
        if width <= 1:
            return
        same_width = width == self._fitted_width
        least = least_height(self._heights, self.label.text(), self.alternatives, width, same_width, self.reserved)
        height = steady_height(self.label, width, self.height(), same_width, least)
        self._fitted_width = width
        if height != self.height():
            self.setFixedHeight(height)
        self.label.setGeometry(0, 0, width, height)

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(self.label.sizeHint().width(), self.height())

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != self._fitted_width:
            self.fit()
        else:
            self.label.setGeometry(0, 0, self.width(), self.height())

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if type(event) is QtCore.QEvent and event.type() == QtCore.QEvent.Type.FontChange:
            self._fitted_width = -1  # zoom, presentation mode: start again from this text's height
            self._heights.forget()
            self.fit()
        return False


class FixedSizeLabel(QtWidgets.QLabel):
    """A one-line label with a fixed size, room for `widest` in its font, so a new text repaints this label only.

    A label whose size may change tells its parent's layout on every setText; in a status bar that lays out
    and repaints the whole bar (every label in it) per toggle. With the minimum size equal to the maximum, Qt
    does not pass the change on. The size follows the label's font (zoom, presentation mode).
    """

    def __init__(self, widest: str, object_name: str = ""):
        super().__init__()
        self.setObjectName(object_name)
        self._widest = widest
        self._fit()

    def _fit(self) -> None:
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        width = metrics.horizontalAdvance(self._widest) + 8 + margins.left() + margins.right()
        height = metrics.height() + margins.top() + margins.bottom()
        self.setFixedSize(width, height)

    def changeEvent(self, event: QtCore.QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QtCore.QEvent.Type.FontChange:
            self._fit()


def settle_views(panel: QtWidgets.QWidget) -> None:
    """Apply the deferred changes of `panel`'s pyqtgraph views (a new x or y range) now, before Qt paints.

    pyqtgraph applies a new range when its scene is about to paint; the new transform then asks for a second
    paint of the same view, so a toggle that moved a plot's range painted that plot twice. Settled here,
    after the panel has drawn the new trace, the first paint is the only one."""
    for view in panel.findChildren(QtWidgets.QGraphicsView):
        prepare = getattr(view.scene(), "prepareForPaint", None)  # pyqtgraph's GraphicsScene
        if prepare is not None and view.isVisible():
            prepare()
