"""What the main window's mixins (window_menus, window_present, window_files, window_status) use of each other
and of MainWindow, for the type checker only: each mixin is a WindowHost while mypy reads it, and `object` at run
time (MainWindow's run-time bases are the mixins and QMainWindow, as before).

Every method here is defined by one mixin or by MainWindow; mypy checks those definitions against these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDockWidget, QLabel, QMainWindow, QMenu, QTextBrowser, QWidget

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from attnlab.present.lessons import Step
    from attnlab.session import Session
    from attnlab.ui.controls.generation_slider import GenerationSlider
    from attnlab.ui.controls.inputs import InputBar
    from attnlab.ui.controls.panel import ControlsPanel
    from attnlab.ui.controls.snapshot_slider import SnapshotSlider
    from attnlab.ui.window.errors import ErrorReporter
    from attnlab.ui.window.navigator import StageNavigator
    from attnlab.ui.window.overview_strip import OverviewStrip
    from attnlab.ui.window.panel_area import PanelScroll
    from attnlab.ui.window.stage_search import StageSearch


class WindowHost(QMainWindow):
    session: Session
    settings: QSettings
    errors: ErrorReporter
    inputs: InputBar
    navigator: StageNavigator
    nav_dock: QDockWidget
    schematic_dock: QDockWidget
    controls_dock: QDockWidget
    controls: ControlsPanel  # the Toggles dock's panel
    recent_menu: QMenu  # window_menus makes it, window_files fills it
    present_action: QAction  # window_menus makes it, window_present checks it
    explanation: QTextBrowser  # MainWindow makes these three; presentation mode folds or shrinks them
    placeholder: QLabel  # the panel shown before the first trace (window_status says there why a run failed)
    stage_title: QLabel
    stage_area: QWidget  # the stage (title, shapes, panel): presenting, the keyboard focus rests here
    timing_label: QLabel  # window_status makes it, window_present hides it while presenting
    overview_strip: OverviewStrip
    present_hint: QLabel  # window_present makes it: the keys of presentation mode, in the status bar
    present_keys_hint: str
    snapshot_slider: SnapshotSlider
    generation_slider: GenerationSlider
    panel_scroll: PanelScroll
    opening: str  # what the last open asked for (window_files), named when it fails (window_status)
    # set on first use by lesson_actions.py and open_model.py (read with getattr until then)
    lesson_player: QObject  # lesson_actions.LessonPlayer (not imported here: lesson_actions imports this module)
    lesson_draft: list[Step]
    _model_info_dialog: QDialog
    _cached_models_dialog: QDialog  # File → Open model… (cached_models.py), kept alive while open

    # ---- MainWindow ---------------------------------------------------------------------------------------
    def current_panel(self) -> QWidget:
        raise NotImplementedError

    def panel_for(self, kind: str) -> QWidget:
        raise NotImplementedError

    def rebuild_panels(self) -> None: ...

    def set_dark(self, dark: bool) -> None: ...

    def go_to_box(self, box: str) -> None: ...

    # ---- window_menus -------------------------------------------------------------------------------------
    def _action(
        self,
        menu: QMenu,
        text: str,
        slot: Callable[..., object],
        shortcuts: Sequence[str | QKeySequence.StandardKey] = (),
        name: str = "",
        checkable: bool = False,
    ) -> QAction:
        raise NotImplementedError

    def step(self, delta: int) -> None: ...

    # ---- window_present -----------------------------------------------------------------------------------
    @property
    def presenting(self) -> bool:
        raise NotImplementedError

    def set_presenting(self, on: bool, full_screen: bool = True) -> None: ...

    def toggle_explanation(self) -> None: ...

    def toggle_controls_dock(self) -> None: ...

    def leave_text_box(self) -> None: ...

    def edit_text(self, edit: QWidget) -> None: ...

    def keep_on_screen(self) -> None: ...

    def fit_plots_to_screen(self) -> None: ...

    @property
    def zoom(self) -> float:
        raise NotImplementedError

    def set_zoom(self, value: float) -> None: ...

    def jump_layer(self, direction: int) -> None: ...

    def jump_sublayer(self, direction: int) -> None: ...

    def open_stage_search(self) -> StageSearch:
        raise NotImplementedError

    # ---- window_files -------------------------------------------------------------------------------------
    def open_checkpoint(self, path: str, settings: dict[str, object] | None = None) -> None: ...

    def open_dialog(self) -> None: ...

    def _fill_recent(self) -> None: ...

    def open_bundled(self, name: str) -> None: ...

    def open_additive(self, path: str | None = None) -> None: ...

    def new_random_model(self) -> None: ...
