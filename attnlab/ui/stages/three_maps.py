"""Three matrices side by side under a heading, with notes below, in a MessageStack (a message replaces them when
there is nothing to draw): the LoRA window's B | A | ΔW and the quantization window's W | Ŵ | |W − Ŵ|."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtWidgets

from attnlab.present.views.model import MatrixView
from attnlab.ui.stages.common import MessageStack, Note, PanelHeatmap, draw_matrix, titled_heatmap


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

    def show_message(self, message: str) -> dict:
        """The message instead of the matrices; what a test reads back."""
        self.stack.show_message(message)
        return {"message": message}

    def show(self, heading: str, maps: Sequence[MatrixView], notes: Sequence[str], colormap: str) -> dict:
        """The heading, the three matrices in `colormap` and the notes; what a test reads back (each map's title
        and its matrix)."""
        self.stack.show_content()
        self.header.show_text(heading)
        for heatmap, matrix in zip(self.maps, maps, strict=True):
            draw_matrix(heatmap, matrix, colormap)
        self.notes.show_text("\n".join(notes))
        return {"titles": [m.title for m in maps], **{m.title: m.matrix for m in maps}}
