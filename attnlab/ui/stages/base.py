"""StagePanel: the base of every per-stage panel. The main window keeps one instance per panel class and
calls `show_stage` whenever the stage, the trace or the view changes; panels never call the model.

`show_stage` is the one place a panel meets the trace, as an opaque handle handed to present/: it builds the
stage's view-model (present/kinds.py: the builder registered for the kind) and gives it to `show_view`, which
each panel implements and which draws only what the view-model holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QPoint, Signal
from PySide6.QtWidgets import QWidget

from attnlab.present.kinds import view_for
from attnlab.present.stages import Stage, ViewState

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace  # an opaque handle: only present/ reads it


class Windowing(Protocol):
    """A panel's window of positions (ui/stages/windowed.PositionWindowing): the view with the window it shows."""

    def view(self, trace: Trace, stage: Stage, view: ViewState) -> ViewState: ...


class StagePanel(QWidget):
    kinds: tuple[str, ...] = ()  # the Stage.kind values this panel draws: filled from ui/stages PANELS
    vocab: Callable[[int], str] | None = None  # output id -> token, set by the host (names predicted tokens)
    windowing: Windowing | None = None  # panels with one row per position: the window they show

    maskCellToggled = Signal(str, int, int)  # site, query index, key index: the person clicked a mask cell
    headSelected = Signal(int)  # the person picked a head (e.g. clicked one in the grid)
    headMenuRequested = Signal(int, QPoint)  # the person right-clicked a head (head, global position)
    positionsChanged = Signal(int, int)  # the person moved the window of positions: (start, size) (long inputs)

    def show_stage(self, trace: Trace, stage: Stage, view: ViewState) -> None:
        """Build the view-model of `stage` (with the window of positions this panel has room for) and draw it."""
        display = view if self.windowing is None else self.windowing.view(trace, stage, view)
        self.show_view(view_for(trace, stage, display, self.vocab, defer=True), stage, display)

    def show_view(self, shown: Any, stage: Stage, view: ViewState) -> None:
        """Draw `shown`, the view-model of `stage` (or the MessageView saying why the run cannot show it)."""
        raise NotImplementedError

    def shown_data(self) -> dict:
        """What the panel currently displays, by name (numpy arrays / lists), so that tests can assert on
        the picture's data without reading pixels. E.g. {"matrix": array, "rows": [...], "cols": [...]}."""
        return {}
