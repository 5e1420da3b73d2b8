"""The main window: composition only. Inputs on top, the current stage's panel and its explanation in the
middle, the pipeline navigator and the architecture schematic on the left, the toggles on the right, and
device / timings / token counts / notices in the status bar.

The menus (window_menus.py), the status bar and banner (window_status.py) and the ways a model is opened
(window_files.py) are mixins of this class; what is here builds the layout, wires the session's signals
and draws the current stage.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QRect, QSettings, Qt
from PySide6.QtGui import QCloseEvent, QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFormLayout,
    QLabel,
    QMainWindow,
    QScrollArea,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from attnlab.limits import MAX_SENTENCE_CHARS
from attnlab.present.model_info import output_vocabulary
from attnlab.present.stages import Stage, shape_text
from attnlab.present.status_texts import model_name
from attnlab.session import Session
from attnlab.ui.controls import head_menu
from attnlab.ui.controls.generation_slider import GenerationSlider
from attnlab.ui.controls.inputs import InputBar
from attnlab.ui.controls.panel import ControlsPanel
from attnlab.ui.controls.snapshot_slider import SnapshotSlider
from attnlab.ui.plots.schematic import Schematic
from attnlab.ui.window import app as appsettings
from attnlab.ui.window import zoom
from attnlab.ui.window.clicker import has_focus_inside
from attnlab.ui.window.errors import ErrorReporter
from attnlab.ui.window.geometry import DEFAULT_SIZE, TOGGLES_LEAST_WIDTH, default_geometry, dock_widths
from attnlab.ui.window.navigator import STEP_KEYS, StageNavigator
from attnlab.ui.window.overview_strip import OverviewStrip
from attnlab.ui.window.panel_area import CurrentPageStack, PanelScroll
from attnlab.ui.window.steady import SteadyBox, settle_views
from attnlab.ui.window.window_files import CHECKPOINT_FILTER, FIRST_PAINT_WAIT_MS, WindowFiles
from attnlab.ui.window.window_menus import SHORTCUTS_HTML, WindowMenus
from attnlab.ui.window.window_present import WindowPresent
from attnlab.ui.window.window_status import CLASSROOM_NOTE, RANDOM_BANNER, WindowStatus, classroom_description

if TYPE_CHECKING:
    from attnlab.present.engine_api import LiveModel, Trace
    from attnlab.ui.plots.compare_panel import ComparePanel
    from attnlab.ui.stages.base import StagePanel

__all__ = [
    "CHECKPOINT_FILTER",
    "CLASSROOM_NOTE",
    "DEFAULT_SIZE",
    "FIRST_PAINT_WAIT_MS",
    "RANDOM_BANNER",
    "SHORTCUTS_HTML",
    "MainWindow",
    "classroom_description",
    "explanation_for",
]

TOGGLE_COMBO_CHARS = 10  # the toggles' combo boxes are at least this wide (in characters), longer choices elide


class MainWindow(WindowMenus, WindowPresent, WindowFiles, WindowStatus, QMainWindow):
    def __init__(self, session: Session | None = None, settings: QSettings | None = None) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("attnlab")
        self.setAcceptDrops(True)
        self.session = session or Session(self)
        self.settings = settings if settings is not None else appsettings.make_settings()
        self.errors = ErrorReporter(self)
        self._panels: dict[type[StagePanel], StagePanel] = {}
        self._shown: tuple[int, str] | tuple[()] = ()  # (id of the trace, stage key) drawn last
        self.last_paint_ms = 0.0
        self._pending_start = None
        self._build_status_bar()
        self._build_central()
        self._build_docks()
        self._build_menus()
        self._init_present()
        self._connect()
        self.setGeometry(default_geometry(self.screen().availableGeometry()))  # frame inside the screen
        self._restore_layout()

    # ---- layout -------------------------------------------------------------------------------------------
    def _build_central(self) -> None:
        """Inputs and banner on top; below them the stage (title, shapes, panel) over its explanation."""
        self.inputs = InputBar(self.session)
        self.stage_title = QLabel("Loading the model…", wordWrap=True)
        self.stage_title.setObjectName("stageTitle")
        # "(no add: residual off)" neither moves the panel nor lays out the window (steady.py)
        self._title_box = SteadyBox(self.stage_title)
        self.stage_shapes = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stage_shapes.setObjectName("stageShapes")
        self._shapes_box = SteadyBox(self.stage_shapes)
        # sized by the panel shown; a panel wider than the room scrolls instead of widening the window
        self.panel_stack = CurrentPageStack(objectName="panelStack")
        self.placeholder = QLabel(
            "Loading the model and tracing the first sentence…", alignment=Qt.AlignmentFlag.AlignCenter
        )
        self.panel_stack.addWidget(self.placeholder)
        self.explanation = QTextBrowser(openExternalLinks=True)
        self.explanation.setObjectName("explanation")
        self.explanation.setMinimumHeight(90)
        # always on: re-setting the HTML empties the document for a moment, and an as-needed bar would
        # vanish and come back, resizing the viewport (and relaying out the text) twice per toggle
        self.explanation.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self._explanation_html = ""
        # presenting, the keyboard focus rests here (never in a text box): a click on it takes it there too
        stage_area = self.stage_area = QWidget()
        stage_area.setObjectName("stageArea")
        stage_area.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        box = QVBoxLayout(stage_area)
        box.setContentsMargins(8, 4, 8, 0)
        self.overview_strip = OverviewStrip()  # presenting: where the current step sits in the model
        box.addWidget(self.overview_strip)
        box.addWidget(self._title_box)
        box.addWidget(self._shapes_box)
        self.snapshot_slider = SnapshotSlider(self.session)  # training steps, when the model keeps snapshots
        box.addWidget(self.snapshot_slider)
        self.generation_slider = GenerationSlider(self.session)  # the generation's steps, once Generate made some
        box.addWidget(self.generation_slider)
        self.panel_scroll = PanelScroll(self.panel_stack)
        box.addWidget(self.panel_scroll, 1)
        split = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        split.setObjectName("centralSplitter")
        split.addWidget(stage_area)
        split.addWidget(self.explanation)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setSizes([600, 170])
        central = QWidget()
        box = QVBoxLayout(central)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.inputs)
        box.addWidget(self.banner_box)
        box.addWidget(split, 1)
        self.setCentralWidget(central)

    def _build_docks(self) -> None:
        """The pipeline navigator and the schematic on the left, the toggles (scrollable) on the right."""
        self.navigator = StageNavigator()
        self.schematic = Schematic()
        self.controls = ControlsPanel(self.session)
        scroll = QScrollArea(widgetResizable=True)
        scroll.setObjectName("controlsScroll")
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        scroll.setWidget(self.controls)
        for combo in self.controls.findChildren(QComboBox):  # long choices elide: the dock fits a 1024-px screen
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(TOGGLE_COMBO_CHARS)
        for form in self.controls.findChildren(QFormLayout):  # a narrow dock puts a field under its label
            form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        bar_width = scroll.verticalScrollBar().sizeHint().width()
        # at most TOGGLES_LEAST_WIDTH: with the docks on the left, the window fits a 1024-px screen (the rows wrap,
        # and what still does not fit scrolls sideways)
        scroll.setMinimumWidth(min(self.controls.minimumSizeHint().width(), TOGGLES_LEAST_WIDTH) + bar_width)
        left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
        self.nav_dock = self._dock("Pipeline", "pipelineDock", self.navigator, left)
        self.schematic_dock = self._dock("Architecture", "architectureDock", self.schematic, left)
        self.controls_dock = self._dock("Toggles", "togglesDock", scroll, right)
        widths = dock_widths(self.screen().availableGeometry())  # narrower on a small screen (a projector)
        self.resizeDocks([self.nav_dock, self.controls_dock], list(widths), Qt.Orientation.Horizontal)
        self.resizeDocks([self.nav_dock, self.schematic_dock], [380, 420], Qt.Orientation.Vertical)

    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(area, dock)
        return dock

    def _connect(self) -> None:
        s = self.session
        s.traceReady.connect(self._on_trace)
        s.stageChanged.connect(lambda _k: self.refresh())
        s.viewChanged.connect(lambda _v: self.refresh())
        s.modelChanged.connect(self._on_model)
        s.modelFailed.connect(self._on_model_failed)
        s.loadDetoured.connect(self._on_load_detour)
        s.loadingChanged.connect(self.cancel_load_button.setVisible)
        s.failed.connect(self._on_failed)
        s.busyChanged.connect(self._on_busy)
        s.layerStreamed.connect(self._on_streamed)
        s.notice.connect(lambda text: self.statusBar().showMessage(text, 6000))
        s.pinnedChanged.connect(lambda _trace: self.refresh())
        self.navigator.stageActivated.connect(s.set_stage)
        self.navigator.stepRequested.connect(self.step)  # a playing lesson takes the steps
        self.schematic.boxClicked.connect(self.go_to_box)
        self.overview_strip.stageClicked.connect(s.set_stage)
        self.inputs.src.returnPressed.connect(self.leave_text_box)
        self.inputs.tgt.returnPressed.connect(self.leave_text_box)

    # ---- drawing ---------------------------------------------------------------------------------------
    def panel_for(self, kind: str) -> StagePanel:
        """The one instance of the panel class that draws `kind` (created on first use)."""
        from attnlab.ui.stages import panel_class_for

        cls = panel_class_for(kind)
        panel = self._panels.get(cls)
        if panel is None:
            appsettings.plot_colours()
            panel = self._panels[cls] = cls()
            self._give_vocabulary(panel)
            panel.maskCellToggled.connect(self.session.toggle_mask_cell)
            panel.headSelected.connect(lambda h: self.session.set_view(head=h))
            panel.positionsChanged.connect(lambda s, n: self.session.set_view(positions=(s, n)))  # w-chips
            head_menu.attach(panel, self.session)  # right-click a head: zero / mean / clear its ablation
            if hasattr(panel, "positionChosen"):  # the output bars' position chooser
                panel.positionChosen.connect(lambda p: self.session.set_view(position=p))
            self.panel_stack.addWidget(panel)
        return panel

    def compare_panel(self) -> ComparePanel:
        """The one ComparePanel (A | B | B − A of the current stage), created on first use."""
        from attnlab.session_patching import patch_from_pinned
        from attnlab.ui.plots.compare_panel import ComparePanel

        panel = self._panels.get(ComparePanel)
        if not isinstance(panel, ComparePanel):  # None: not made yet
            appsettings.plot_colours()
            panel = self._panels[ComparePanel] = ComparePanel()
            panel.patchAsked.connect(lambda *asked: patch_from_pinned(self.session, *asked))  # issue 37
            self._give_vocabulary(panel)
            self.panel_stack.addWidget(panel)
        return panel

    def _give_vocabulary(self, panel: StagePanel) -> None:
        """Panels that name output ids (the next-token bars, the "input → predicted" decoder rows) get the model's
        output vocabulary."""
        model = self.session.model
        if model is not None:
            panel.vocab = output_vocabulary(model)  # names the decoder rows' predictions
            if hasattr(panel, "set_vocabulary"):
                panel.set_vocabulary(panel.vocab)

    def current_panel(self) -> QWidget:
        panel = self.panel_stack.currentWidget()
        assert panel is not None  # the placeholder until the first stage is drawn
        return panel

    def refresh(self) -> None:
        """Redraw what depends on the trace, stage and view; records the time it took in last_paint_ms. The
        widgets paint what changed when the event loop next runs (no forced repaint of the whole panel: its
        notes, titles and unchanged plots keep their pixels)."""
        s = self.session
        trace, stage = s.trace, s.stage
        if trace is None or stage is None:
            return
        start = time.perf_counter()
        panel: StagePanel
        if s.pinned is not None and s.view.compare != "off":
            panel = pair = self.compare_panel()
            pair.unpatched = s.unpatched  # run B before its patches (issue 37)
            self.panel_stack.setCurrentWidget(panel)
            pair.show_pair(s.pinned, trace, stage, s.view)
        else:
            panel = self.panel_for(stage.kind)
            self.panel_stack.setCurrentWidget(panel)
            panel.show_stage(trace, stage, s.view)
        settle_views(panel)
        if self._shown[:2] != (id(trace), stage.key):
            html = explanation_for(stage, trace)
            if html != self._explanation_html:  # same text after a toggle: keep the laid-out document
                self._explanation_html = html
                self.explanation.setHtml(html)
            for label, steady, text in (
                (self.stage_title, self._title_box, stage_heading(stage)),
                (self.stage_shapes, self._shapes_box, shape_text(trace, stage)),
            ):
                if text != label.text():
                    label.setText(text)
                    steady.fit()
        self._shown = (id(trace), stage.key)
        self.navigator.select(stage.key)
        self.schematic.set_current(stage.schematic_box)
        self.overview_strip.set_current(stage.key)
        self.last_paint_ms = (time.perf_counter() - start) * 1000.0
        self._show_status(trace)

    def _on_trace(self, trace: Trace) -> None:
        s = self.session
        # the run the panels show, never the request; its repaint is queued behind the panel's (Schematic.set_run)
        self.schematic.set_run(trace.config, trace.options)
        self.overview_strip.set_stages(s.stages)
        if s.stages is not self.navigator.stages():  # a new list: the title makes room for its longest headings
            self._title_box.alternatives = longest_headings(s.stages)
            self._title_box.fit()
        self.navigator.set_stages(s.stages, s.stage_key)
        self.refresh()
        self._update_banner(trace)

    def set_dark(self, dark: bool) -> None:
        appsettings.apply_theme(dark)
        self.settings.setValue(appsettings.DARK, dark)
        self.rebuild_panels()

    def rebuild_panels(self) -> None:
        """Make the panels again (they take their colours and fonts when made) and redraw the current stage."""
        if has_focus_inside(self.panel_stack):  # a focused plot goes: the focus stays
            self.stage_area.setFocus()  # in the stage area (never handed on to the source box)
        for panel in self._panels.values():  # plots take their colours when created: make them again
            self.panel_stack.removeWidget(panel)
            panel.deleteLater()
        self._panels.clear()
        self._shown = ()
        self.schematic.update()
        self.refresh()

    # ---- model and navigation ------------------------------------------------------------------------------
    def _on_model(self, model: LiveModel) -> None:
        s = self.session
        self.schematic.set_model(model.config)  # its trained wiring, until its first trace arrives
        self.setWindowTitle(f"attnlab — {model_name(model)}")
        for panel in self._panels.values():
            self._give_vocabulary(panel)
        if s.model_path:
            appsettings.add_recent_file(self.settings, s.model_path)

    def go_to_box(self, box: str) -> None:
        """Jump to the first stage drawn by this schematic box."""
        for stage in self.session.stages:
            if stage.schematic_box == box:
                self.session.set_stage(stage.key)
                return

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_plots_to_screen()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Arrow keys that no focused widget used step through the stages."""
        step = STEP_KEYS.get(event.key())
        if step is not None and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            self.step(step)
            return
        super().keyPressEvent(event)

    # ---- settings ----------------------------------------------------------------------------------------
    def _restore_layout(self) -> None:
        geometry = self.settings.value(appsettings.GEOMETRY)
        state = self.settings.value(appsettings.WINDOW_STATE)
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            self.restoreState(state)

    def closeEvent(self, event: QCloseEvent) -> None:
        st = self.settings
        st.setValue(appsettings.GEOMETRY, self.saveGeometry())
        st.setValue(appsettings.WINDOW_STATE, self.saveState())
        if self.session.src:
            st.setValue(appsettings.LAST_SENTENCE, self.session.src[:MAX_SENTENCE_CHARS])  # what the box holds
            if self.session.model is not None:
                st.setValue(appsettings.LAST_SENTENCE_MODEL, model_name(self.session.model))
        st.sync()
        if self._presenting:  # the plot floors and the text scale are the application's: give them back (the
            # numbers only: restyling the whole application from a closing window repolishes every widget alive)
            self._presenting = False
            zoom.set_presenting(False)
            zoom.set_factor(self._zoom)
        self.errors.uninstall()
        self._remove_clicker()
        self.session.shutdown()
        super().closeEvent(event)


def stage_heading(stage: Stage) -> str:
    """The stage title above the panel: 'Encoder layer 1 · add & LayerNorm 1 (enc.0.norm1)'. People count
    layers and heads from 1; the trace name (0-based) is shown beside, for the API."""
    return f"<b>{stage.group}</b> · {stage.title} <span style='color:{appsettings.muted_colour()}'>({stage.key})</span>"


def longest_headings(stages: list[Stage], count: int = 3) -> tuple[str, ...]:
    """The headings of the `count` stages with the most characters: the ones that wrap first as the window
    narrows (measuring all ~150 at every width would cost milliseconds)."""
    longest = sorted(stages, key=lambda s: len(s.group) + len(s.title) + len(s.key), reverse=True)[:count]
    return tuple(stage_heading(s) for s in longest)


def default_size(available: QRect) -> tuple[int, int]:
    """The window's inside at start on a screen with this available area (geometry.default_geometry)."""
    size = default_geometry(available).size()
    return size.width(), size.height()


def explanation_for(stage: Stage, trace: Trace) -> str:
    from attnlab.present.explain import explanation_html  # imported late: it needs the engine (torch)

    return explanation_html(stage, trace)
