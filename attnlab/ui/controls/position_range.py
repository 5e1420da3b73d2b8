"""The position-range control of a panel that lists tokens (issue 23): which window of positions it shows.

A spin box for the first position (type a position, or ↑ / ↓ an eighth of a window), the window's last position
and the sequence length, and a slider over the whole sequence (↑ / ↓ the same steps; PageUp / PageDown are the
app's stage keys, docs/ui.md). Alt+T focuses the spin box. Hidden while every position fits. The rules (default
window, clamping, following a position) are Qt-free in present/position_range.py."""

from __future__ import annotations

from PySide6 import QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.present.position_range import PositionWindow


class PositionRangeBar(QtWidgets.QWidget):
    """'Positions [start] – stop of T ────slider────': emits `moved(start)` when the person moves it."""

    moved = Signal(int)  # the window's new first position

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("positionRange")
        label = QtWidgets.QLabel("Posi&tions", self)  # Alt+T: P and S are the prompt box and the Stage menu
        self.start = QtWidgets.QSpinBox(self)
        self.start.setObjectName("positionStart")
        self.start.setToolTip("The first position shown (type one, or ↑ / ↓); the window keeps its size")
        self.start.setKeyboardTracking(False)  # typing 4000 moves once, not to 4, 40, 400 and 4000
        label.setBuddy(self.start)
        self.span = QtWidgets.QLabel(self)
        self.slider = QtWidgets.QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setObjectName("positionSlider")
        self.slider.setToolTip("Move the window of positions over the whole sequence (↑ / ↓: an eighth of a window)")
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(label)
        layout.addWidget(self.start)
        layout.addWidget(self.span)
        layout.addWidget(self.slider, 1)
        self.shown = PositionWindow(0, 0, 0)
        self.start.valueChanged.connect(self._picked)
        self.slider.valueChanged.connect(self._picked)
        self.setVisible(False)

    def show_window(self, window: PositionWindow) -> None:
        """Show `window` (no signal); hidden when it holds every position."""
        self.shown = window
        if window.whole:
            self.setVisible(False)
            return
        last_start = window.total - window.size
        for control in (self.start, self.slider):
            control.blockSignals(True)
            control.setRange(0, last_start)
            control.setValue(window.start)
            control.blockSignals(False)
        self.slider.setPageStep(window.size)
        self.slider.setSingleStep(max(1, window.size // 8))
        self.start.setSingleStep(max(1, window.size // 8))
        self.span.setText(f"– {window.stop - 1:,} of {window.total:,} ({window.size} shown)")
        self.setVisible(True)

    def _picked(self, start: int) -> None:
        if start != self.shown.start:
            self.moved.emit(start)
