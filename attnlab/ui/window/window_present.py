"""In front of a class (a mixin of MainWindow): presentation mode, one zoom for all text, the clicker keys
that step from anywhere, layer / sub-layer jumps and the stage search.

- `set_presenting(True)` (View → Present, F5): full screen, docks and menu bar folded away, all text
  PRESENT_BOOST larger; T brings the toggles dock back (and hides it again); Esc or F5 leaves.
  The plot comes first: the explanation folds away (E brings it back, with PRESENT_EXPLANATION_SHARE of the
  height, and folds it again; the status bar says so), the training-step slider keeps one line, every matrix
  plot keeps zoom.row_floor pixels per row and the stage area scrolls when the plots no longer fit.
- Zoom (Ctrl+= / Ctrl+− / Ctrl+0): 75–300 %, remembered under settings key app.ZOOM; every panel reads
  `zoom.factor()` when it is made, so a change rebuilds the panels, the app font and the stylesheet.
- Clicker: PageDown / PageUp / → / ← / Space step the stages wherever the focus is (a slider, a spin box, a
  button, the explanation), except in a text box with a cursor. An application event filter takes them before
  the focused widget does, so a focused slider never swallows a step. ↑ / ↓ still move sliders and spin boxes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QDockWidget,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSplitter,
    QTextEdit,
    QWidget,
)

from attnlab.present.stages import layer_jump, sublayer_jump
from attnlab.ui.window import app as appsettings
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.ui.window.stage_search import StageSearch
    from attnlab.ui.window.window_host import WindowHost
else:
    WindowHost = object  # the type checker's view of MainWindow (window_host.py)

PRESENT_EXPLANATION_SHARE = 0.3  # of the stage area's height, when E brings the explanation back presenting
PRESENT_HINT = "E: explanation · T: toggles · Esc: leave"
CLICKER_STEPS: dict[int, int] = {  # Qt.Key -> stages to step
    Qt.Key.Key_PageDown: 1,
    Qt.Key.Key_PageUp: -1,
    Qt.Key.Key_Right: 1,
    Qt.Key.Key_Left: -1,
    Qt.Key.Key_Space: 1,
}


def is_text_box(widget: QWidget | None) -> bool:
    """A widget where keys type text: an editable line edit (not a spin box's) or text editor."""
    if isinstance(widget, QLineEdit):
        return not widget.isReadOnly() and not isinstance(widget.parent(), QAbstractSpinBox)
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    return False


class ClickerFilter(QObject):
    """Application-wide: the clicker keys, T and Esc in presentation mode, before any focused widget sees them."""

    def __init__(self, window: WindowHost):
        super().__init__(window)
        self.window = window

    def _action(self, target: QWidget, event: QKeyEvent) -> Callable[[], None] | None:
        w = self.window
        if QApplication.activePopupWidget() is not None or QApplication.activeModalWidget() is not None:
            return None
        if target.window() is not w:  # another window (a dialog, the stage search) keeps its keys
            return None
        if is_text_box(target) or event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            return None
        key = event.key()
        if key in CLICKER_STEPS:
            return lambda: w.step(CLICKER_STEPS[key])  # a playing lesson's next step, else the next stage
        if w.presenting and key == Qt.Key.Key_T:
            return lambda: w.controls_dock.setVisible(not w.controls_dock.isVisible())
        if w.presenting and key == Qt.Key.Key_E:
            return w.toggle_explanation
        if w.presenting and key == Qt.Key.Key_Escape:
            return lambda: w.set_presenting(False)
        return None

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        # every event of the application passes here: a type test first (reading event.type() makes a Python
        # enum per event, ~1 ms of each repaint); KeyPress and ShortcutOverride are both QKeyEvents
        if not isinstance(event, QKeyEvent):
            return False
        kind = event.type()
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) or not isinstance(obj, QWidget):
            return False
        action = self._action(obj, event)
        if action is None:
            return False
        if kind == QEvent.Type.ShortcutOverride:  # claim the key so no window shortcut (PgDown, Esc) fires too
            event.accept()
            return True
        action()
        return True


class WindowPresent(WindowHost):
    """Presentation mode, zoom, jumps and search for MainWindow."""

    _split_sizes: list[int]
    stage_search: StageSearch

    def _init_present(self) -> None:
        self._presenting = False
        self._before_present: tuple[bool, list[bool]] | None = None
        # whatever the store holds: clamp_zoom makes 1.0 of what is no number
        self._zoom = zoom.clamp_zoom(cast(float, self.settings.value(appsettings.ZOOM, 1.0)))
        self._base_point_size = zoom.base_points(QApplication.font().pointSizeF())
        self._clicker = ClickerFilter(self)
        self.present_hint = QLabel(PRESENT_HINT)  # the keys of presentation mode, shown while presenting
        self.present_hint.setObjectName("presentHint")
        self.present_hint.setVisible(False)
        self.statusBar().addPermanentWidget(self.present_hint)
        appsettings.application().installEventFilter(self._clicker)
        self._apply_scale(rebuild=False)

    def _remove_clicker(self) -> None:
        appsettings.application().removeEventFilter(self._clicker)

    # ---- presentation mode -------------------------------------------------------------------------------
    @property
    def presenting(self) -> bool:
        return self._presenting

    def set_presenting(self, on: bool, full_screen: bool = True) -> None:
        """Enter or leave presentation mode. `full_screen=False` keeps the window size (screenshots, tests)."""
        on = bool(on)
        if on == self._presenting:
            return
        self._presenting = on
        zoom.set_presenting(on)  # the plot sizes hold while presenting (the panels are made again below)
        zoom.set_screen_scale(self.width(), self.height())
        docks = self.findChildren(QDockWidget)  # pipeline, architecture, toggles, whole-model view, …
        if on:
            self._before_present = (self.isFullScreen(), [d.isVisible() for d in docks])
            for dock in docks:
                dock.hide()
            self.menuBar().hide()
            if full_screen and not self.isFullScreen():
                self.showFullScreen()
        else:
            was_full, visible = self._before_present or (False, [True] * len(docks))
            for dock, shown in zip(docks, visible, strict=True):
                dock.setVisible(shown)
            self.menuBar().show()
            if self.isFullScreen() and not was_full:
                self.showNormal()
        self.present_action.setChecked(on)
        self.snapshot_slider.set_compact(on)
        self.panel_scroll.set_whole_height(not on)
        self._apply_scale()
        self._fold_explanation(on)
        self.present_hint.setVisible(on)
        self.statusBar().showMessage(f"Presenting · {PRESENT_HINT}" if on else "Left presentation mode", 5000)

    def _fold_explanation(self, on: bool) -> None:
        """Presenting: the explanation folds away (the plot comes first); leaving shows it again and puts the
        splitter back where it was."""
        split = self.findChild(QSplitter, "centralSplitter")
        assert split is not None  # MainWindow._build_central makes it
        if on:
            self._split_sizes = split.sizes()
            self.explanation.hide()
        else:
            self.explanation.show()
            if getattr(self, "_split_sizes", None):
                split.setSizes(self._split_sizes)

    def toggle_explanation(self) -> None:
        """E while presenting: bring the explanation back under the stage (PRESENT_EXPLANATION_SHARE of the
        height, its text is larger now), or fold it away again."""
        split = self.findChild(QSplitter, "centralSplitter")
        assert split is not None
        if self.explanation.isVisible():
            self.explanation.hide()
            return
        self.explanation.show()
        total = sum(split.sizes())
        below = int(total * PRESENT_EXPLANATION_SHARE)
        split.setSizes([total - below, below])

    def fit_plots_to_screen(self) -> None:
        """Presenting, the plots grow with the window past 1024×768 (zoom.set_screen_scale): a window whose scale
        changed makes its panels again."""
        if self._presenting and zoom.set_screen_scale(self.width(), self.height()):
            self.rebuild_panels()

    # ---- zoom --------------------------------------------------------------------------------------------
    @property
    def zoom(self) -> float:
        return self._zoom

    def set_zoom(self, value: float) -> None:
        value = zoom.clamp_zoom(value)
        self.settings.setValue(appsettings.ZOOM, value)
        if value != self._zoom:
            self._zoom = value
            self._apply_scale()
        self.statusBar().showMessage(f"Zoom {value:.0%}", 2000)

    def _apply_scale(self, rebuild: bool = True) -> None:
        """Every text size follows zoom × (presentation boost): the app font, the stylesheet's sizes, the
        explanation, and the panels (made again, as their fonts are set when they are made)."""
        zoom.set_factor(self._zoom * (zoom.PRESENT_BOOST if self._presenting else 1.0))
        app = appsettings.application()
        font = QFont(app.font())
        font.setPointSizeF(self._base_point_size * zoom.factor())
        app.setFont(font)
        app.setStyleSheet(appsettings.stylesheet(bool(app.property("darkTheme"))))  # the explanation, the title
        if rebuild:
            self.rebuild_panels()

    # ---- jumps -------------------------------------------------------------------------------------------
    def jump_layer(self, direction: int) -> None:
        key = layer_jump(self.session.stages, self.session.stage_key, direction)
        if key:
            self.session.set_stage(key)

    def jump_sublayer(self, direction: int) -> None:
        key = sublayer_jump(self.session.stages, self.session.stage_key, direction)
        if key:
            self.session.set_stage(key)

    def open_stage_search(self) -> StageSearch:
        """The type-to-search stage picker; returns the (non-modal) dialog so tests can type into it."""
        from attnlab.ui.window.stage_search import StageSearch

        dialog = StageSearch(self.session.stages, self.session.stage_key, self)
        dialog.stageChosen.connect(self.session.set_stage)
        dialog.finished.connect(dialog.deleteLater)
        dialog.show()
        dialog.edit.setFocus()
        self.stage_search = dialog
        return dialog
