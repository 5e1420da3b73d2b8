"""The whole-model attention view in a dock: View → Whole-model attention (Ctrl+M). The pyqtgraph widget
(attnlab/ui/plots/model_view.py) is made the first time the dock is shown, so start-up does not import pyqtgraph
for it; while hidden it draws nothing, and a run that arrived meanwhile is drawn when it is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu

from attnlab.present.window_facts import site_weights

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace
    from attnlab.ui.plots.model_view import ModelView
    from attnlab.ui.window.window_host import WindowHost


class ModelViewDock(QDockWidget):
    """The model view in a dock (View → Whole-model attention, Ctrl+M). It draws only while visible: a run
    that arrives while it is hidden is drawn when it is shown."""

    def __init__(self, window: WindowHost) -> None:
        super().__init__("Whole-model attention", window)
        self.setObjectName("modelViewDock")
        self._window = window
        self.view: ModelView | None = None  # made when first shown
        self._session = window.session
        self._drawn: Trace | None = None
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self)
        self.hide()
        self._session.traceReady.connect(lambda _t: self.refresh())
        self.visibilityChanged.connect(lambda _v: self.refresh())

    def refresh(self) -> None:
        trace = self._session.trace
        if trace is None or trace is self._drawn or not self.isVisible():
            return
        view = self.view if self.view is not None else self._make_view()
        view.set_trace(trace)
        self._drawn = trace

    def _make_view(self) -> ModelView:
        from attnlab.ui.plots.model_view import ModelView
        from attnlab.ui.window import app as appsettings

        appsettings.plot_colours()
        view = self.view = ModelView()
        view.cellClicked.connect(self.open_head)
        self.setWidget(view)
        if not self.isFloating():  # docked below the stage: give it room for the grids
            window = self._window
            window.resizeDocks([self], [max(320, window.height() // 2)], Qt.Orientation.Vertical)
        return view

    def open_head(self, site: str, head: int) -> None:
        """Open the attention weights stage of this site, with this head selected."""
        self._session.set_view(head=head)
        self._session.set_stage(site_weights(site))


def add_model_view(window: WindowHost, menu: QMenu) -> ModelViewDock:
    """View → Whole-model attention (Ctrl+M): shows or hides the dock."""
    dock = ModelViewDock(window)
    action = dock.toggleViewAction()
    action.setObjectName("modelViewAction")
    action.setShortcut(QKeySequence("Ctrl+M"))
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    window.addAction(action)
    menu.addAction(action)
    return dock
