"""Three matrices side by side under a heading, with notes below, in a MessageStack (a message replaces them when
there is nothing to draw): the LoRA window's B | A | ΔW and the quantization window's W | Ŵ | |W − Ŵ|."""

from __future__ import annotations

from PySide6 import QtWidgets

from attnlab.ui.stages.common import MessageStack, Note, PanelHeatmap, titled_heatmap


class ThreeMaps:
    """The parts a window's panel lays out: `header`, the three `maps`, `notes` (room for `note_lines` lines
    kept, so a longer note does not move the maps) and the `stack` that holds them all."""

    def __init__(self, parent: QtWidgets.QWidget, note_lines: int):
        self.header = Note(parent, delta=1, bold=True)
        boxes = [titled_heatmap(parent, wrap=True) for _ in range(3)]
        self.maps: list[PanelHeatmap] = [m for _, m in boxes]
        row = QtWidgets.QHBoxLayout()
        for box, _ in boxes:
            row.addWidget(box, 1)
        self.notes = Note(parent, reserve_lines=note_lines)
        body = QtWidgets.QWidget(parent)
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addLayout(row, 1)
        layout.addWidget(self.notes)
        self.stack = MessageStack(body, parent)
