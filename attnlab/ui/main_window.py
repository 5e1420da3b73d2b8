"""The main window: composition only. Inputs on top, the current stage's panel and its explanation in the
middle, the pipeline navigator and the architecture schematic on the left, the toggles on the right, and
device / timings / token counts / notices in the status bar."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from attnlab.limits import MAX_SENTENCE_CHARS
from attnlab.session import Session, shape_text
from attnlab.ui import app as appsettings
from attnlab.ui.controls import ControlsPanel, InputBar, RandomModelDialog
from attnlab.ui.errors import ErrorReporter
from attnlab.ui.navigator import STEP_KEYS, StageNavigator
from attnlab.ui.schematic import Schematic

FIRST_PAINT_WAIT_MS = 1000
DEFAULT_SIZE = (1400, 900)
CHECKPOINT_FILTER = "Checkpoints (*.safetensors *.pt *.pth);;All files (*)"
RANDOM_BANNER = "Randomly initialised model — attention is noise: nothing here was learned."
CLASSROOM_NOTE = ("Classroom model ({what}), trained on short generated sentences with a small vocabulary: "
                  "other sentences still run, but then its outputs are meaningless.")


class MainWindow(QMainWindow):
    def __init__(self, session: Session | None = None, settings=None):
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("attnlab")
        self.setAcceptDrops(True)
        self.session = session or Session(self)
        self.settings = settings if settings is not None else appsettings.make_settings()
        self.errors = ErrorReporter(self)
        self._panels: dict[type, QWidget] = {}
        self._shown: tuple = ()
        self.last_paint_ms = 0.0
        self._pending_start = None  # the start-up load, run after the first paint
        s = self.session

        self.inputs = InputBar(s)
        self.banner = QLabel(objectName="banner", wordWrap=True, visible=False)
        self.stage_title = QLabel("Loading the model…", objectName="stageTitle", wordWrap=True)
        self.stage_shapes = QLabel(objectName="stageShapes", wordWrap=True,
                                   textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.panel_stack = QStackedWidget(objectName="panelStack")
        self.placeholder = QLabel("Loading the model and tracing the first sentence…",
                                  alignment=Qt.AlignmentFlag.AlignCenter)
        self.panel_stack.addWidget(self.placeholder)
        self.explanation = QTextBrowser(objectName="explanation", openExternalLinks=True)
        self.explanation.setMinimumHeight(90)
        # always on: re-setting the HTML empties the document for a moment, and an as-needed bar would
        # vanish and come back, resizing the viewport (and relaying out the text) twice per toggle
        self.explanation.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self._explanation_html = ""
        stage_area = QWidget()
        box = QVBoxLayout(stage_area)
        box.setContentsMargins(8, 4, 8, 0)
        box.addWidget(self.stage_title)
        box.addWidget(self.stage_shapes)
        box.addWidget(self.panel_stack, 1)
        split = QSplitter(Qt.Orientation.Vertical, objectName="centralSplitter", childrenCollapsible=False)
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
        box.addWidget(self.banner)
        box.addWidget(split, 1)
        self.setCentralWidget(central)

        self.navigator = StageNavigator()
        self.schematic = Schematic()
        self.controls = ControlsPanel(s)
        scroll = QScrollArea(widgetResizable=True, objectName="controlsScroll",
                             horizontalScrollBarPolicy=Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.controls)
        bar_width = scroll.verticalScrollBar().sizeHint().width()
        scroll.setMinimumWidth(self.controls.minimumSizeHint().width() + bar_width)
        left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
        self.nav_dock = self._dock("Pipeline", "pipelineDock", self.navigator, left)
        self.schematic_dock = self._dock("Architecture", "architectureDock", self.schematic, left)
        self.controls_dock = self._dock("Toggles", "togglesDock", scroll, right)
        self.resizeDocks([self.nav_dock, self.controls_dock], [290, 280], Qt.Orientation.Horizontal)
        self.resizeDocks([self.nav_dock, self.schematic_dock], [380, 420], Qt.Orientation.Vertical)

        self.device_label = QLabel(objectName="deviceLabel")
        self.timing_label = QLabel(objectName="timingLabel")
        self.tokens_label = QLabel(objectName="tokensLabel")
        self.notice_label = QLabel(objectName="noticeLabel")
        self.busy = QProgressBar(objectName="busyIndicator", minimum=0, maximum=0, maximumWidth=120,
                                 textVisible=False, visible=False)
        # room for the widest timing up front: a label that grows and shrinks with its digits relays out
        # the whole status bar on every toggle
        widest = "compute 8888.8 ms · paint 8888.8 ms"
        self.timing_label.setMinimumWidth(self.timing_label.fontMetrics().horizontalAdvance(widest) + 8)
        bar = self.statusBar()
        for w in (self.device_label, self.timing_label, self.tokens_label):
            bar.addPermanentWidget(w)
        bar.addWidget(self.notice_label, 1)
        bar.addPermanentWidget(self.busy)
        self._build_menus()

        s.traceReady.connect(self._on_trace)
        s.stageChanged.connect(lambda _k: self.refresh())
        s.viewChanged.connect(lambda _v: self.refresh())
        s.optionsChanged.connect(lambda o: self.schematic.set_model(s.model.config if s.model else None, o))
        s.modelChanged.connect(self._on_model)
        s.modelFailed.connect(self._on_model_failed)
        s.failed.connect(self._on_failed)
        s.busyChanged.connect(self._on_busy)
        s.notice.connect(lambda text: self.statusBar().showMessage(text, 6000))
        self.navigator.stageActivated.connect(s.set_stage)
        self.navigator.stepRequested.connect(s.step_stage)
        self.schematic.boxClicked.connect(self.go_to_box)
        self.inputs.src.returnPressed.connect(self.navigator.setFocus)
        self.inputs.tgt.returnPressed.connect(self.navigator.setFocus)
        screen = self.screen().availableGeometry()
        self.resize(min(DEFAULT_SIZE[0], screen.width()), min(DEFAULT_SIZE[1], screen.height()))
        self._restore_layout()

    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self, objectName=name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, menu, text: str, slot, shortcuts=(), name: str = "", checkable: bool = False
                ) -> QAction:
        action = QAction(text, self, checkable=checkable)
        if name:
            action.setObjectName(name)
        action.setShortcuts([QKeySequence(k) for k in shortcuts])
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        (action.toggled if checkable else action.triggered).connect(slot)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        s, bar = self.session, self.menuBar()
        m = bar.addMenu("&File")
        self._action(m, "&Open checkpoint…", self.open_dialog, [QKeySequence.StandardKey.Open], "openAction")
        self.recent_menu = m.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        bundled = m.addMenu("Open &bundled model")
        for name, text in (("translation", "Translation (English → French)"),
                           ("language", "Language model (next word)")):
            self._action(bundled, text, lambda _=False, n=name: self.open_bundled(n))
        self._action(m, "&New random model…", self.new_random_model, ["Ctrl+N"], "randomAction")
        m.addSeparator()
        self._action(m, "&Quit", self.close, [QKeySequence.StandardKey.Quit])
        m = bar.addMenu("&Stage")
        self._action(m, "&Next stage\t→ / PgDn", lambda: s.step_stage(1), ["PgDown"], "nextStageAction")
        self._action(m, "&Previous stage\t← / PgUp", lambda: s.step_stage(-1), ["PgUp"], "prevStageAction")
        self._action(m, "&First stage\tHome", lambda: s.step_stage(-(10**9)))
        self._action(m, "&Last stage\tEnd", lambda: s.step_stage(10**9))
        m.addSeparator()
        self._action(m, "&Generate next token", s.generate_next, ["Ctrl+G"], "generateAction")
        self._action(m, "Edit &source sentence", lambda: self._focus(self.inputs.src), ["Ctrl+L"])
        self._action(m, "Edit &decoder input", lambda: self._focus(self.inputs.tgt), ["Ctrl+Shift+L"])
        self._action(m, "Go to the &stage list", self.navigator.setFocus, ["Esc"])
        self._action(m, "&Reset all toggles", s.reset_options, ["Ctrl+R"])
        m = bar.addMenu("&View")
        dark = appsettings.read_bool(self.settings, appsettings.DARK)
        self.dark_action = self._action(m, "&Dark theme", self.set_dark, ["Ctrl+Shift+D"], "darkAction", True)
        self.dark_action.setChecked(dark)
        self._action(m, "&Full screen", self._toggle_full_screen, ["F11"])
        m.addSeparator()
        for dock in (self.nav_dock, self.schematic_dock, self.controls_dock):
            m.addAction(dock.toggleViewAction())
        m = bar.addMenu("&Help")
        self._action(m, "&Keyboard shortcuts", self.show_shortcuts, ["F1"])

    # ---- drawing ---------------------------------------------------------------------------------------
    def panel_for(self, kind: str) -> QWidget:
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
            self.panel_stack.addWidget(panel)
        return panel

    def _give_vocabulary(self, panel) -> None:
        """Panels that name output ids (the next-token bars) get the model's output vocabulary."""
        model = self.session.model
        if model is not None and hasattr(panel, "set_vocabulary"):
            tok = model.tgt_tokenizer if model.config.has_decoder else model.src_tokenizer
            panel.set_vocabulary(tok.id_to_token if tok is not None else None)

    def current_panel(self) -> QWidget:
        return self.panel_stack.currentWidget()

    def refresh(self) -> None:
        """Redraw what depends on the trace, stage and view; records the time it took in last_paint_ms."""
        s = self.session
        trace, stage = s.trace, s.stage
        if trace is None or stage is None:
            return
        start = time.perf_counter()
        panel = self.panel_for(stage.kind)
        self.panel_stack.setCurrentWidget(panel)
        panel.show_stage(trace, stage, s.view)
        if self._shown[:2] != (id(trace), stage.key):
            html = explanation_for(stage, trace)
            if html != self._explanation_html:  # same text after a toggle: keep the laid-out document
                self._explanation_html = html
                self.explanation.setHtml(html)
            self.stage_title.setText(f"<b>{stage.group}</b> · {stage.title}")
            self.stage_shapes.setText(shape_text(trace, stage))
        self._shown = (id(trace), stage.key)
        self.navigator.select(stage.key)
        self.schematic.set_current(stage.schematic_box)
        panel.repaint()
        self.last_paint_ms = (time.perf_counter() - start) * 1000.0
        self._show_status(trace)

    def _on_trace(self, trace) -> None:
        s = self.session
        self.navigator.set_stages(s.stages, s.stage_key)
        self.refresh()
        self._update_banner(trace)

    def _show_status(self, trace) -> None:
        info = trace.info
        self.device_label.setText(f"Device: {str(info.get('device', '?')).upper()}")
        self.timing_label.setText(f"compute {info.get('job_ms', info.get('compute_ms', 0.0)):.1f} ms · "
                                  f"paint {self.last_paint_ms:.1f} ms")
        sides = (("src.tokens", "source"), ("tgt.tokens", "decoder"))
        counts = [f"{len(trace[n])} {what}" for n, what in sides if n in trace]
        self.tokens_label.setText("Tokens: " + " + ".join(counts))
        notices = list(trace.notices)
        self.notice_label.setText(" · ".join(notices))
        self.notice_label.setToolTip("\n".join(notices))

    def _update_banner(self, trace) -> None:
        """Say when the numbers mean nothing: a random model, a notice from the loader, unknown tokens;
        for a classroom model, a quieter note that it only knows its small training language."""
        model = self.session.model
        meta = model.metadata if model else {}
        warnings = [RANDOM_BANNER] if meta.get("random") else []
        if meta.get("notice"):
            warnings.append(str(meta["notice"]))
        unknown = sum(tok == "<unk>" for n in ("src.tokens", "tgt.tokens") for tok in trace.get(n, []))
        if unknown and not meta.get("random"):
            warnings.append(f"{unknown} token(s) are not in this model's vocabulary and became <unk>: "
                            "the model has never seen them, so expect meaningless output.")
        lines = warnings or ([CLASSROOM_NOTE.format(what=classroom_description(meta["classroom_model"]))]
                             if meta.get("classroom_model") else [])
        text, level = "\n".join(dict.fromkeys(lines)), "warning" if warnings else "info"
        self.banner.setText(text)
        if self.banner.property("level") != level:  # re-polishing restyles (and repaints) the window
            self.banner.setProperty("level", level)
            self.banner.style().unpolish(self.banner)
            self.banner.style().polish(self.banner)
        self.banner.setVisible(bool(lines))

    def set_dark(self, dark: bool) -> None:
        appsettings.apply_theme(dark)
        self.settings.setValue(appsettings.DARK, dark)
        for panel in self._panels.values():  # plots take their colours when created: make them again
            self.panel_stack.removeWidget(panel)
            panel.deleteLater()
        self._panels.clear()
        self._shown = ()
        self.schematic.update()
        self.refresh()

    # ---- model and state changes -------------------------------------------------------------------------
    def _on_model(self, model) -> None:
        s = self.session
        self.schematic.set_model(model.config, s.options)
        self.setWindowTitle(f"attnlab — {model.name}")
        for panel in self._panels.values():
            self._give_vocabulary(panel)
        if s.model_path:
            appsettings.add_recent_file(self.settings, s.model_path)

    def _on_model_failed(self, message: str) -> None:
        QMessageBox.warning(self, "Could not open the model", message)

    def _on_failed(self, message: str) -> None:
        self.statusBar().showMessage("Not run: " + message.replace("\n", " "), 10000)

    def _on_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)

    def go_to_box(self, box: str) -> None:
        """Jump to the first stage drawn by this schematic box."""
        for stage in self.session.stages:
            if stage.schematic_box == box:
                self.session.set_stage(stage.key)
                return

    def _focus(self, edit) -> None:
        edit.setFocus()
        edit.selectAll()

    def keyPressEvent(self, event) -> None:
        """Arrow keys that no focused widget used step through the stages."""
        step = STEP_KEYS.get(event.key())
        if step is not None and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            self.session.step_stage(step)
            return
        super().keyPressEvent(event)

    def _toggle_full_screen(self) -> None:
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    def show_shortcuts(self) -> None:
        QMessageBox.information(self, "Keyboard shortcuts", SHORTCUTS_HTML)

    # ---- files -------------------------------------------------------------------------------------------
    def open_checkpoint(self, path: str) -> None:
        from attnlab.checkpoints import load_checkpoint

        path = str(Path(path).expanduser())
        self.statusBar().showMessage(f"Opening {path}…")
        self.session.load_async(lambda: load_checkpoint(path), path=path, src=self.session.src or None,
                                prefix=True)

    def open_bundled(self, name: str) -> None:
        from attnlab.checkpoints import load_bundled

        self.session.load_async(lambda: load_bundled(name), prefix=True)

    def open_dialog(self) -> None:
        start = str(self.settings.value(appsettings.LAST_CHECKPOINT, "") or "")
        folder = str(Path(start).parent) if start else ""
        path, _ = QFileDialog.getOpenFileName(self, "Open a checkpoint", folder, CHECKPOINT_FILTER)
        if path:
            self.open_checkpoint(path)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        paths = appsettings.recent_files(self.settings)
        for path in paths:
            action = self.recent_menu.addAction(Path(path).name, lambda p=path: self.open_checkpoint(p))
            action.setToolTip(path)
        if not paths:
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    def new_random_model(self) -> None:
        from attnlab.checkpoints import random_model

        model = self.session.model
        dialog = RandomModelDialog(model.config if model else None, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            config, seed = dialog.config(), dialog.seed.value()
            self.session.load_async(lambda: random_model(config, seed), src=self.session.src or None,
                                    prefix=True)

    def dragEnterEvent(self, event) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()
            self.open_checkpoint(urls[0].toLocalFile())

    # ---- settings ----------------------------------------------------------------------------------------
    def _restore_layout(self) -> None:
        geometry = self.settings.value(appsettings.GEOMETRY)
        state = self.settings.value(appsettings.WINDOW_STATE)
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            self.restoreState(state)

    def closeEvent(self, event) -> None:
        st = self.settings
        st.setValue(appsettings.GEOMETRY, self.saveGeometry())
        st.setValue(appsettings.WINDOW_STATE, self.saveState())
        if self.session.src:
            st.setValue(appsettings.LAST_SENTENCE, self.session.src[:MAX_SENTENCE_CHARS])  # what the box holds
            if self.session.model is not None:
                st.setValue(appsettings.LAST_SENTENCE_MODEL, self.session.model.name)
        st.sync()
        self.errors.uninstall()
        self.session.shutdown()
        super().closeEvent(event)

    def start(self, loader, src: str | None = None, tgt: str | None = None, stage: str | None = None,
              path: str | None = None, remembered: tuple[str, str] | None = None) -> None:
        """Once the window has painted: build the model with `loader()` off the GUI thread and trace `src`.

        Waiting for the first paint matters: importing torch on the worker holds the GIL for about a second,
        which would otherwise delay the window itself."""
        if stage:
            self.session.stage_key = stage
        self._pending_start = lambda: self.session.load_async(loader, path=path, src=src, tgt=tgt,
                                                              prefix=tgt is None, remembered=remembered)
        self.installEventFilter(self)
        QTimer.singleShot(FIRST_PAINT_WAIT_MS, self._run_pending_start)  # in case no paint comes (hidden)

    def _run_pending_start(self) -> None:
        self.removeEventFilter(self)
        start, self._pending_start = self._pending_start, None
        if start is not None:
            start()

    def eventFilter(self, watched, event) -> bool:
        """Installed by start() until the first paint of the window."""
        if watched is self and event.type() == QEvent.Type.Paint and self._pending_start is not None:
            QTimer.singleShot(0, self._run_pending_start)
        return False


def classroom_description(name: str) -> str:
    """'translation' -> 'English → French translation, encoder-decoder'."""
    from attnlab.checkpoints import BUNDLED

    text = BUNDLED.get(str(name), str(name)).replace("->", "→")
    return text.replace(" (", ", ").rstrip(")")


def explanation_for(stage, trace) -> str:
    from attnlab.ui.explain import explanation_html  # imported late: it needs the engine (torch)

    return explanation_html(stage, trace)


SHORTCUTS_HTML = """<table cellspacing=4>
<tr><td><b>→</b> / <b>PgDn</b></td><td>next stage</td></tr>
<tr><td><b>←</b> / <b>PgUp</b></td><td>previous stage</td></tr>
<tr><td><b>Home</b> / <b>End</b></td><td>first / last stage</td></tr>
<tr><td><b>Esc</b> / <b>Enter</b> in a text box</td><td>back to the stage list</td></tr>
<tr><td><b>Ctrl+L</b> / <b>Ctrl+Shift+L</b></td><td>edit the source sentence / decoder input</td></tr>
<tr><td><b>Ctrl+G</b></td><td>generate the next token</td></tr>
<tr><td><b>Ctrl+R</b></td><td>reset every toggle</td></tr>
<tr><td><b>Ctrl+O</b> / <b>Ctrl+N</b></td><td>open a checkpoint / new random model</td></tr>
<tr><td><b>Ctrl+Shift+D</b></td><td>dark theme</td></tr>
<tr><td><b>F11</b></td><td>full screen</td></tr>
<tr><td><b>F1</b></td><td>this list</td></tr></table>"""
