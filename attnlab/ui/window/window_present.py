"""In front of a class (a mixin of MainWindow): presentation mode, one zoom for all text, the clicker keys
that step from anywhere, layer / sub-layer jumps and the stage search.

- `set_presenting(True)` (View → Present, F5): full screen, docks and menu bar folded away, all text
  PRESENT_BOOST larger; T brings the toggles dock back (and hides it again); Esc or F5 leaves.
  The plot comes first: the explanation folds away (E brings it back, with PRESENT_EXPLANATION_SHARE of the
  height, and folds it again; the status bar says so), the training-step slider keeps one line, every matrix
  plot keeps zoom.row_floor pixels per row and the stage area scrolls when the plots no longer fit.
- Zoom (Ctrl+= / Ctrl+− / Ctrl+0): 75–300 %, remembered under settings key app.ZOOM; every panel reads
  `zoom.factor()` when it is made, so a change rebuilds the panels, the app font and the stylesheet.
- The keys (clicker.py): PageDown / PageUp / → / ← / Space step from any focus; presenting, also Home / End,
  E, T and Esc, whatever has the focus: a text box keeps its keys only after a click into it or Ctrl+L.
  Presenting never leaves the focus in a text box (hiding the docks would hand it to the source box).
- Presenting, the status bar shows no timings (the class reads the plot) and the compact architecture strip
  (ui/window/overview_strip.py) stays above the stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QRect, QTimer
from PySide6.QtGui import QFont, QShowEvent
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QSplitter, QWidget

from attnlab.present.stage_jumps import layer_jump, sublayer_jump
from attnlab.ui.window import app as appsettings
from attnlab.ui.window import zoom
from attnlab.ui.window.clicker import CLICKER_STEPS, ClickerFilter, has_focus_inside, is_text_box
from attnlab.ui.window.geometry import inside_screen

if TYPE_CHECKING:
    from attnlab.ui.window.stage_search import StageSearch
    from attnlab.ui.window.window_host import WindowHost
else:
    WindowHost = object  # the type checker's view of MainWindow (window_host.py)

# after the first show: the window manager frames the window meanwhile (later on a busy machine)
PLACE_AFTER_MS = (0, 300, 1000, 2500)
PRESENT_EXPLANATION_SHARE = 0.3  # of the stage area's height, when E brings the explanation back presenting
PRESENT_HINT = "→ / Space: next · E: explanation · T: toggles · Ctrl+L: type · Esc: leave"
__all__ = ["CLICKER_STEPS", "PRESENT_EXPLANATION_SHARE", "PRESENT_HINT", "ClickerFilter", "WindowPresent"]
__all__ += ["is_text_box"]


class WindowPresent(WindowHost):
    """Presentation mode, zoom, jumps and search for MainWindow."""

    _split_sizes: list[int]
    stage_search: StageSearch
    present_keys_hint = PRESENT_HINT  # what present_hint says while no text box is being typed into

    def _init_present(self) -> None:
        self._presenting = False
        self._placed = False  # keep_on_screen once the window manager has framed the shown window
        self._sized = False  # … unless a caller sized it since (a test, a screenshot at 1024×768): see resize
        self._before_present: tuple[bool, list[bool], QRect] | None = None
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
        self._clicker.stop_typing()
        self._presenting = on
        zoom.set_presenting(on)  # the plot sizes hold while presenting (the panels are made again below)
        zoom.set_screen_scale(self.width(), self.height())
        docks = self.findChildren(QDockWidget)  # pipeline, architecture, toggles, whole-model view, …
        if on:
            self.park_focus()  # before the docks go: hiding a focused dock hands the focus to the source box
            self._before_present = (self.isFullScreen(), [d.isVisible() for d in docks], self.geometry())
            for dock in docks:
                dock.hide()
            self.menuBar().hide()
            if full_screen and not self.isFullScreen():
                self.showFullScreen()
        self.present_action.setChecked(on)
        self.snapshot_slider.set_compact(on)
        self.panel_scroll.set_whole_height(not on)
        self._apply_scale()  # leaving: the normal fonts first, so the window's least size is the normal one
        self._fold_explanation(on)
        if not on:
            self._restore_after_present(docks)
            # a Toggles dock that T showed while presenting stays shown: its narrow width back, once laid out
            QTimer.singleShot(0, self.controls, self.controls.fit_presenting)
        self.present_hint.setVisible(on)
        self.timing_label.setVisible(not on)  # compute / paint times are for the developer, not the class
        self.overview_strip.set_presenting(on)
        self.statusBar().showMessage("" if on else "Left presentation mode", 5000)  # the hint says the keys

    def _restore_after_present(self, docks: list[QDockWidget]) -> None:
        """Leaving: the docks and menu bar back, and the window where it was, inside its screen."""
        was_full, visible, geometry = self._before_present or (False, [True] * len(docks), QRect())
        for dock, shown in zip(docks, visible, strict=True):
            dock.setVisible(shown)
        self.menuBar().show()
        if not self.isFullScreen() or was_full:  # presenting in a window (screenshots, tests): its size stays
            return
        self.showNormal()
        if geometry.isValid():
            self.setGeometry(geometry)  # the least size is the normal one again (_apply_scale ran first)
        for delay in (0, 300, 1000):  # once the window manager has framed the normal window again
            QTimer.singleShot(delay, self, self.keep_on_screen)

    # ---- where the window goes -----------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._placed:  # the frame (title bar) is known once the window manager has drawn it
            self._placed = True
            for delay in PLACE_AFTER_MS:
                QTimer.singleShot(delay, self, self._place_at_start)

    def _place_at_start(self) -> None:
        """The start geometry (the default or the remembered one), framed, kept inside the screen."""
        if not self._sized:
            self.keep_on_screen()

    def resize(self, *size: Any) -> None:  # QWidget.resize: a QSize, or a width and a height
        """A size a caller asks for is kept at start (tests and screenshots size the window for a screen they
        stand for); the start geometry of the window itself is kept inside the screen (_place_at_start)."""
        self._sized = True
        super().resize(*size)

    def keep_on_screen(self) -> None:
        """Move and shrink the window so its frame (title bar included) lies inside its screen's available
        area; a full-screen or maximised window is left alone."""
        available = self.available_geometry()
        if self._presenting or self.isFullScreen() or self.isMaximized() or available is None:
            return
        inner = self.geometry()
        rect = inside_screen(inner, self.frameGeometry(), available, self.minimumSizeHint())
        if rect != inner:
            self.setGeometry(rect)

    def available_geometry(self) -> QRect | None:
        """The window's screen less its panels and docks (None before it has a screen)."""
        screen = self.screen()
        return screen.availableGeometry() if screen is not None else None

    def park_focus(self) -> None:
        """Give the keyboard focus to the stage area (never a text box): the clicker keys reach it as before."""
        central = self.centralWidget()
        if is_text_box(QApplication.focusWidget()) or central is None or not has_focus_inside(central):
            self.stage_area.setFocus()

    def leave_text_box(self) -> None:
        """Enter or Esc in the sentence: presenting, the focus goes back to the stage (the keys step again);
        else to the stage list."""
        self._clicker.stop_typing()
        if self._presenting:
            self.stage_area.setFocus()
        else:
            self.navigator.setFocus()

    def edit_text(self, edit: QWidget) -> None:
        """Ctrl+L / Ctrl+Shift+L: type into this box (presenting, it keeps its keys from now on)."""
        self._clicker.allow_typing(edit)
        edit.setFocus()

    def toggle_controls_dock(self) -> None:
        """T while presenting: the toggles dock comes back, or goes (the focus never falls to a text box)."""
        dock = self.controls_dock
        if dock.isVisible():
            if has_focus_inside(dock):
                self.stage_area.setFocus()
            dock.hide()
        else:
            dock.show()

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
