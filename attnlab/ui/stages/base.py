"""StagePanel: the base of every per-stage panel. The main window keeps one instance per panel class and
calls `show_stage` whenever the stage, the trace or the view changes; panels never call the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Signal
from PySide6.QtWidgets import QWidget

from attnlab.present.stages import Stage, ViewState

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace


class StagePanel(QWidget):
    kinds: tuple[str, ...] = ()  # the Stage.kind values this panel draws
    vocab: Callable[[int], str] | None = None  # output id -> token, set by the host (names predicted tokens)

    maskCellToggled = Signal(str, int, int)  # site, query index, key index: the person clicked a mask cell
    headSelected = Signal(int)  # the person picked a head (e.g. clicked one in the grid)
    headMenuRequested = Signal(int, QPoint)  # the person right-clicked a head (head, global position)
    positionsChanged = Signal(int, int)  # the person moved the window of positions: (start, size) (w-chips)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        raise NotImplementedError

    def shown_data(self) -> dict:
        """What the panel currently displays, by name (numpy arrays / lists), so that tests can assert on
        the picture's data without reading pixels. E.g. {"matrix": array, "rows": [...], "cols": [...]}."""
        return {}
