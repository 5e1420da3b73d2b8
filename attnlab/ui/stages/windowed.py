"""A panel's window of positions (issue 23: long inputs): the range bar it embeds, how many readable rows its
picture has room for (ui/window/zoom.py's row-pixel figures), and the view it hands its view-model, whose
`positions` say which rows to read. One helper for every panel that draws one row per position."""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from attnlab.present import position_range
from attnlab.present.position_range import PositionWindow
from attnlab.present.stages import Stage, ViewState
from attnlab.ui.controls.position_range import PositionRangeBar
from attnlab.ui.plots.axes import tick_font
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace

UNLAID_HEIGHT = 480  # the picture's height before the panel is laid out (a 768-px screen's stage area)


def readable_row_px(base: float) -> float:
    """The pixels a row needs to read: the zoom.py figure at the current text scale (and screen, presenting),
    and never less than a line of tick labels (a row whose token label is not drawn cannot be read)."""
    label_line = QtGui.QFontMetrics(tick_font()).lineSpacing()
    return max(base * zoom.factor() * (zoom.screen_scale() if zoom.presenting() else 1.0), float(label_line))


class PositionWindowing(QtCore.QObject):
    """Embedded by a panel: `bar` goes into its layout; `view(...)` in show_stage gives the view to build from;
    moving the bar (or a resize that changes the rows that fit) draws the panel again and emits the panel's
    positionsChanged, so the window persists from stage to stage (ViewState.positions)."""

    def __init__(self, panel: StagePanel, picture: QtWidgets.QWidget, row_px: float, *, across: bool = False):
        super().__init__(panel)
        self.bar = PositionRangeBar(panel)
        # the panel is this object's Qt parent (self.parent()), never an attribute: a panel <-> helper reference
        # cycle would leave a dropped panel to the garbage collector, which may run on the session's worker
        # thread, and a QWidget deleted there aborts the process
        self._picture, self._row_px = picture, row_px
        self._across = across  # positions run across the picture (columns: the logit lens), not down it
        # what was last shown, to draw again when the window moves; the trace weakly (a panel out of sight must
        # not keep an 8,192-token trace alive once the session has a newer one)
        self._last: tuple[weakref.ref[Trace], Stage, ViewState] | None = None
        self._fit = 0
        self._selected = -1  # the selected position last seen (followed once when it changes)
        self.window: PositionWindow | None = None
        self.bar.moved.connect(self._moved)
        picture.installEventFilter(self)

    def fit(self) -> int:
        """Readable rows the picture has room for now."""
        room = float(self._picture.width() if self._across else self._picture.height())
        view_box = getattr(self._picture, "view_box", None)  # a heatmap: the rows get its plot area, not its axes
        if callable(view_box):
            box = view_box()
            room = min(room, box.width() if self._across else box.height()) if box.height() > 1 else room
        laid_out = self._picture.isVisible() and room > 40
        unlaid = UNLAID_HEIGHT * 2 if self._across else UNLAID_HEIGHT
        return position_range.rows_that_fit(room if laid_out else unlaid, readable_row_px(self._row_px))

    def view(self, trace: Trace, stage: Stage, view: ViewState, side: str) -> ViewState:
        """`view` with the window this panel shows (its start from `view`, its size what fits); when the selected
        position (`ViewState.position`, picked on the output stage) has changed since the last call, the window
        moves to hold it. The bar shows the window."""
        self._last = (weakref.ref(trace), stage, view)
        self._fit = self.fit()
        total = position_range.side_length(trace, side) or 0
        size = position_range.window_size(total, self._fit)
        window = position_range.window_for(trace, side, (view.positions[0], size))
        if window is not None and view.position >= 0 and view.position != self._selected:
            window = position_range.follow(window, view.position)
        self._selected = view.position
        self.window = window
        if window is None:
            self.bar.setVisible(False)
            return replace(view, positions=(0, 0))
        self.bar.show_window(window)
        return replace(view, positions=(window.start, 0 if window.whole else window.size))

    def _moved(self, start: int) -> None:
        shown = self._shown()
        if shown is None or self.window is None:
            return
        trace, stage, view = shown
        size = self.window.size
        panel = self.parent()
        if isinstance(panel, StagePanel):
            panel.show_stage(trace, stage, replace(view, positions=(start, size)))
            panel.positionsChanged.emit(start, size)

    def _shown(self) -> tuple[Trace, Stage, ViewState] | None:
        """(trace, stage, view) last shown, while that trace is alive."""
        if self._last is None:
            return None
        ref, stage, view = self._last
        trace = ref()
        return None if trace is None else (trace, stage, view)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        # getattr: at interpreter exit Qt may still deliver events after this object's attributes are gone
        if watched is getattr(self, "_picture", None) and event.type() == QtCore.QEvent.Type.Resize:
            QtCore.QTimer.singleShot(0, self, self._refit)
        return False

    def _refit(self) -> None:
        """After a resize: draw again when the rows that fit changed and the sequence does not fit."""
        shown = self._shown()
        if shown is None or self.window is None or self.fit() == self._fit:
            return
        if self.window.whole and position_range.window_size(self.window.total, self.fit()) == 0:
            return
        trace, stage, view = shown
        at_end = self.window.stop == self.window.total  # a window at the end stays there (clamped to the last)
        start = self.window.total if at_end and not self.window.whole else self.window.start
        panel = self.parent()
        if isinstance(panel, StagePanel):
            panel.show_stage(trace, stage, replace(view, positions=(start, 0)))
