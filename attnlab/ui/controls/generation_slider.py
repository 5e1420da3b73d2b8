"""The generation timeline under the stage title: one stop per Generate step the session kept (its cached steps,
session_generation.GenerationRun), the right end being the whole sequence. Shown once a generation has steps
and while the texts are its own; moving it sets the view's position (ViewState.upto): the attention maps show
the rows computed up to that step (present/timeline.py) and the KV-cache stage that step's cache. Nothing is
re-run: scrubbing only redraws."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from attnlab.session import Session

TOOLTIP = "Move through the generation: the maps show the rows computed up to this step (the right end: all)"
WIDEST_LABEL = "step 8888 of 8888 · position 8888"


def step_label(index: int, positions: list[int]) -> str:
    """'step 3 of 7 · position 12'; the last stop 'step 7 of 7 · all rows' (every row of the shown run, the
    token the last step chose included: a position there would name a row the maps go past)."""
    if index == len(positions) - 1:
        return f"step {index} of {len(positions) - 1} · all rows"
    return f"step {index} of {len(positions) - 1} · position {positions[index]}"


class GenerationSlider(QWidget):
    """ "Generation: [────●──] step 3 of 7 · position 12"."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("generationBar")
        self.setVisible(False)
        self.session = session
        self.positions: list[int] = []
        self.slider = QSlider(Qt.Orientation.Horizontal, tickPosition=QSlider.TickPosition.TicksBelow)
        self.slider.setObjectName("generationSlider")
        self.slider.setRange(0, 0)
        self.slider.setPageStep(1)
        self.slider.setToolTip(TOOLTIP)
        self.slider.setAccessibleName("Generation step")
        self.label = QLabel()
        self.label.setObjectName("generationStepLabel")
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance(WIDEST_LABEL) + 8)
        title = QLabel("Generation:")
        title.setBuddy(self.slider)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 2, 0, 2)
        row.addWidget(title)
        row.addWidget(self.slider, 1)
        row.addWidget(self.label)
        self.slider.valueChanged.connect(self._on_value)
        session.timelineChanged.connect(lambda _p: self.sync())
        session.traceReady.connect(lambda _t: self.sync())
        session.textsChanged.connect(self.sync)

    def sync(self) -> None:
        """Follow the session: one stop per step of its generation, at the view's position; hidden without."""
        positions = self.session.timeline()
        self.positions = positions
        self.setVisible(bool(positions))
        if not positions:
            if self.session.view.upto != -1:
                self.session.set_view(upto=-1)
            return
        upto = self.session.view.upto
        index = positions.index(upto) if upto in positions else len(positions) - 1
        self.slider.blockSignals(True)
        self.slider.setMaximum(len(positions) - 1)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        self.label.setText(step_label(index, positions))

    def _on_value(self, index: int) -> None:
        positions = self.positions
        if not positions:
            return
        self.label.setText(step_label(index, positions))
        self.session.set_view(upto=-1 if index == len(positions) - 1 else positions[index])
