"""The training-step slider under the stage title: the open model's weights at the steps its snapshots keep
(checkpoints/snapshots.py), the right end being the trained model. Shown on attention stages, and only when the
open model has snapshots; moving it asks the Session to re-run the sentence with that step's weights."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QSlider, QWidget

from attnlab.present.training_steps import hint_text, step_label
from attnlab.session import Session

TOOLTIP = "Move through the model's weights during training (the right end is the trained model)"
WIDEST_LABEL = "step 88888 of 88888 (trained) · training loss 88.88"


class SnapshotSlider(QWidget):
    """ "Training step: [────●──] step 400 of 3000 · training loss 2.73", and what to watch, under it."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("snapshotBar")
        self.setVisible(False)
        self.session = session
        self.slider = QSlider(Qt.Orientation.Horizontal, tickPosition=QSlider.TickPosition.TicksBelow)
        self.slider.setObjectName("trainingStepSlider")
        self.slider.setRange(0, 0)
        self.slider.setPageStep(1)
        self.slider.setToolTip(TOOLTIP)
        self.slider.setAccessibleName("Training step")
        self.label = QLabel()
        self.label.setObjectName("trainingStepLabel")
        # room for the widest text up front: a label that grows and shrinks relays out the stage on every step
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance(WIDEST_LABEL) + 8)
        self.hint = QLabel(wordWrap=True)
        self.hint.setObjectName("trainingStepHint")
        self._compact = False  # presenting: one line, what to watch in the slider's tooltip
        title = QLabel("Training step:")
        title.setBuddy(self.slider)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 2, 0, 2)
        grid.addWidget(title, 0, 0)
        grid.addWidget(self.slider, 0, 1)
        grid.addWidget(self.label, 0, 2)
        grid.addWidget(self.hint, 1, 0, 1, 3)
        grid.setColumnStretch(1, 1)
        self.slider.valueChanged.connect(self._on_value)
        session.snapshotsChanged.connect(lambda _s: self.sync())
        session.trainingStepChanged.connect(lambda _s: self.sync())
        session.stageChanged.connect(lambda _k: self.sync())
        session.traceReady.connect(lambda _t: self.sync())

    @property
    def steps(self) -> tuple[int, ...]:
        snapshots = self.session.snapshots
        return snapshots.steps if snapshots is not None else ()

    def shown_step(self) -> int | None:
        """The step the slider stands on (None without snapshots)."""
        steps = self.steps
        return steps[self.slider.value()] if steps else None

    def sync(self) -> None:
        """Follow the session: range and position from its snapshots and step, visible on attention stages."""
        s, steps, snapshots = self.session, self.steps, self.session.snapshots
        stage = s.stage
        self.setVisible(bool(steps) and stage is not None and stage.site is not None)
        if not steps or snapshots is None:  # steps come from the snapshots
            return
        step = s.training_step if s.training_step is not None else steps[-1]
        self.slider.blockSignals(True)
        self.slider.setMaximum(len(steps) - 1)
        self.slider.setValue(steps.index(step))
        self.slider.blockSignals(False)
        self.label.setText(step_label(step, steps[-1], snapshots.loss_at(step)))
        self.hint.setText(hint_text(stage.site if stage is not None else None))
        self.set_compact(self._compact)

    def set_compact(self, compact: bool) -> None:
        """Presenting: the slider keeps one line (the plot comes first); what to watch moves to its tooltip."""
        self._compact = bool(compact)
        self.hint.setVisible(not self._compact)
        self.slider.setToolTip(self.hint.text() if self._compact and self.hint.text() else TOOLTIP)

    def _on_value(self, index: int) -> None:
        steps = self.steps
        if steps:
            self.session.set_training_step(steps[index])
