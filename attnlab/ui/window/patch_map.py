"""A window: the patching map (issue 37), layers × positions (the residual stream) or layers × heads (each
head's output), filled row by row on the Session's worker while this window only draws; a click on a cell
opens that patched run in the main window. View → Patching map… (run A pinned with Ctrl+P, run B current).
Every word and number comes from present/patching.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtWidgets

from attnlab.present import patching
from attnlab.session_patching import open_cell, start_map, stop_map
from attnlab.ui.stages.common import note_font, titled_heatmap
from attnlab.ui.window.geometry import resize_for_screen

if TYPE_CHECKING:
    from attnlab.session import Session

INTRO = (
    "Activation patching: run B (the current run) again with one value taken from run A (the pinned run), "
    "and see how much of A's answer comes back. Each cell: (patched − B) / (A − B) of the logit difference "
    "logit(correct) − logit(wrong); 100% gives back A's answer, 0% changes nothing. Click a cell to open that run."
)
KINDS = (
    ("residual", "Residual stream: layer × position"),
    ("head", "Head output: layer × head"),
    ("cross", "Cross-attention head output: layer × head"),
)


class PatchMapWindow(QtWidgets.QWidget):
    def __init__(self, session: Session, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("patchMapWindow")
        self.setWindowTitle("Patching map (A → B)")
        self.session = session
        intro = QtWidgets.QLabel(INTRO, self)
        intro.setWordWrap(True)
        intro.setFont(note_font())
        self.kind = QtWidgets.QComboBox(self)
        self.kind.setObjectName("patchMapKind")
        for value, text in KINDS:
            self.kind.addItem(text, value)
        self.start = QtWidgets.QPushButton("Fill the map", self)
        self.start.setObjectName("patchMapStart")
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.kind, 1)
        row.addWidget(self.start)
        box, self.heatmap = titled_heatmap(self, rows_title="layer", cols_title="position")
        self.heatmap.setObjectName("patchMapHeatmap")
        self.note = QtWidgets.QLabel("", self)
        self.note.setObjectName("patchMapNote")
        self.note.setWordWrap(True)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(row)
        layout.addWidget(box, 1)
        layout.addWidget(self.note)
        self.map: patching.PatchMap | None = None
        self.start.clicked.connect(self.fill)
        session.patchMapChanged.connect(self.show_map)
        session.failed.connect(self._failed)
        self.heatmap.cellClicked.connect(self.open_cell)
        self.heatmap.cellHovered.connect(self._hover)
        resize_for_screen(self, 900, 560)

    def fill(self) -> None:
        start_map(self.session, str(self.kind.currentData()))

    def show_map(self, made: patching.PatchMap) -> None:
        self.map = made
        values = np.nan_to_num(made.values, nan=0.0)  # rows not yet computed: drawn as "no effect" until they are
        self.heatmap.draw(values, made.rows, made.columns, title=made.title(), colormap="RdBu_r", levels=(-1.0, 1.0))

    def open_cell(self, row: int, column: int) -> None:
        """Open cell (row, column)'s patched run in the main window (B with that one patch)."""
        if self.map is not None:
            open_cell(self.session, self.map, row, column)

    def _hover(self, row: int, column: int) -> None:
        if self.map is not None and row < len(self.map.cells):
            self.note.setText(self.map.cell_text(row, column))

    def _failed(self, message: str) -> None:
        if self.isVisible():
            self.note.setText(message)

    def closeEvent(self, event: object) -> None:
        stop_map(self.session)
        super().closeEvent(event)  # type: ignore[arg-type]
