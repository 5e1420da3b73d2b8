"""The main window's menus and keyboard shortcuts (a mixin of MainWindow: it uses the window's session,
settings, docks, inputs and navigator, and the file actions of WindowFiles)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLineEdit, QMenu, QMessageBox, QWidget

from attnlab.present.model_info import input_words
from attnlab.present.words import word
from attnlab.ui.window import app as appsettings
from attnlab.ui.window import get_model, open_model, zoom
from attnlab.ui.window.about import show_about
from attnlab.ui.window.chat_dialog import open_chat_dialog
from attnlab.ui.window.export_actions import add_export_menu
from attnlab.ui.window.lesson_actions import add_lesson_actions, lesson_step
from attnlab.ui.window.model_view_dock import ModelViewDock, add_model_view

if TYPE_CHECKING:
    from attnlab.ui.window.window_host import WindowHost
else:
    WindowHost = object  # the type checker's view of MainWindow (window_host.py)

BUNDLED_MENU = (("translation", "Translation (English → French)"), ("language", "Language model (next word)"))
FIRST, LAST = -(10**9), 10**9  # step_stage deltas that reach the ends

SHORTCUTS_HTML = """<table cellspacing=4>
<tr><td><b>→</b> / <b>PgDn</b></td><td>next stage</td></tr>
<tr><td><b>←</b> / <b>PgUp</b></td><td>previous stage</td></tr>
<tr><td><b>Home</b> / <b>End</b></td><td>first / last stage</td></tr>
<tr><td><b>Esc</b> / <b>Enter</b> in a text box</td><td>back to the stage list</td></tr>
<tr><td><b>Ctrl+L</b> / <b>Ctrl+Shift+L</b></td><td>edit the source sentence / decoder input</td></tr>
<tr><td><b>Ctrl+G</b></td><td>generate the next token</td></tr>
<tr><td><b>Ctrl+R</b></td><td>reset every toggle</td></tr>
<tr><td><b>Ctrl+P</b> / <b>Ctrl+Shift+P</b></td><td>pin this run as A (again: unpin) / next compare view</td></tr>
<tr><td><b>Ctrl+O</b> / <b>Ctrl+N</b></td><td>open a checkpoint / new random model</td></tr>
<tr><td><b>Ctrl+Shift+D</b></td><td>dark theme</td></tr>
<tr><td><b>Space</b></td><td>next stage (from anywhere but a text box)</td></tr>
<tr><td><b>Ctrl+→</b> / <b>Ctrl+←</b></td><td>next / previous layer</td></tr>
<tr><td><b>Alt+→</b> / <b>Alt+←</b></td><td>next / previous sub-layer</td></tr>
<tr><td><b>Ctrl+K</b> or <b>/</b></td><td>find a stage by typing</td></tr>
<tr><td><b>F5</b></td><td>present (full screen, docks folded; the keys step from anywhere, <b>E</b> explanation, \
<b>T</b> toggles, <b>Ctrl+L</b> or a click types into the sentence, <b>Esc</b> leaves)</td></tr>
<tr><td><b>Ctrl+=</b> / <b>Ctrl+−</b> / <b>Ctrl+0</b></td><td>zoom all text in / out / 100 %</td></tr>
<tr><td><b>F11</b></td><td>full screen</td></tr>
<tr><td><b>F1</b></td><td>this list</td></tr></table>"""


class WindowMenus(WindowHost):
    """File, Stage, View and Help menus; every action is a window shortcut."""

    dark_action: QAction
    model_view_dock: ModelViewDock
    patch_map_window: QWidget  # View → Patching map (ui/window/patch_map.py), once opened

    def _action(
        self,
        menu: QMenu,
        text: str,
        slot: Callable[..., object],
        shortcuts: Sequence[str | QKeySequence.StandardKey] = (),
        name: str = "",
        checkable: bool = False,
    ) -> QAction:
        action = QAction(text, self, checkable=checkable)
        if name:
            action.setObjectName(name)
        action.setShortcuts([QKeySequence(k) for k in shortcuts])
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        (action.toggled if checkable else action.triggered).connect(slot)
        menu.addAction(action)
        self.addAction(action)  # shortcuts keep working while the menu bar is hidden (presentation mode)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self._build_file_menu(bar.addMenu("&File"))
        self._build_stage_menu(bar.addMenu("&Stage"))
        self._build_view_menu(bar.addMenu("&View"))
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&Keyboard shortcuts", self.show_shortcuts, ["F1"])
        self._action(help_menu, "&About attnlab", lambda: show_about(self), name="aboutAction")

    def _build_file_menu(self, m: QMenu) -> None:
        self._action(m, "&Open checkpoint…", self.open_dialog, [QKeySequence.StandardKey.Open], "openAction")
        open_model.add_file_actions(self, m)  # Open folder…, Model info…
        get_model.add_get_action(self, m)  # Get a model… (from the Hugging Face Hub)
        self.recent_menu = m.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        bundled = m.addMenu("Open &bundled model")
        for name, text in BUNDLED_MENU:
            self._action(bundled, text, lambda _=False, n=name: self.open_bundled(n))
        self._action(bundled, word("additive"), lambda _=False: self.open_additive(), name="additiveAction")
        self._action(m, "&New random model…", self.new_random_model, ["Ctrl+N"], "randomAction")
        m.addSeparator()
        add_export_menu(self, m)  # Export ▸ PNG / SVG / CSV / .npz
        add_lesson_actions(self, m)  # Open lesson…, Save lesson…, Add current stage to lesson
        m.addSeparator()
        self._action(m, "&Quit", self.close, [QKeySequence.StandardKey.Quit])

    def _build_stage_menu(self, m: QMenu) -> None:
        s = self.session
        self._action(m, "&Next stage\t→ / PgDn", lambda: self.step(1), ["PgDown"], "nextStageAction")
        self._action(m, "&Previous stage\t← / PgUp", lambda: self.step(-1), ["PgUp"], "prevStageAction")
        self._action(m, "&First stage\tHome", lambda: s.step_stage(FIRST))
        self._action(m, "&Last stage\tEnd", lambda: s.step_stage(LAST))
        self._action(m, "Next &layer\tCtrl+→", lambda: self.jump_layer(1), ["Ctrl+Right"], "nextLayerAction")
        self._action(m, "Previous la&yer\tCtrl+←", lambda: self.jump_layer(-1), ["Ctrl+Left"], "prevLayerAction")
        self._action(m, "Next s&ub-layer\tAlt+→", lambda: self.jump_sublayer(1), ["Alt+Right"], "nextSublayerAction")
        self._action(
            m, "Previous su&b-layer\tAlt+←", lambda: self.jump_sublayer(-1), ["Alt+Left"], "prevSublayerAction"
        )
        self._action(m, "&Find stage…\tCtrl+K or /", self.open_stage_search, ["Ctrl+K", "/"], "findStageAction")
        m.addSeparator()
        self._action(m, "&Generate next token", s.generate_next, ["Ctrl+G"], "generateAction")
        self._action(m, "Edit &source sentence", lambda: self._focus(self.inputs.src), ["Ctrl+L"])
        self._action(m, "Edit &decoder input", lambda: self._focus(self.inputs.tgt), ["Ctrl+Shift+L"])
        self.chat_action = self._action(m, "&Conversation…", self._open_chat, ["Ctrl+Shift+T"], "chatAction")
        self.chat_action.setEnabled(False)  # a model with a chat template enables it
        s.modelChanged.connect(lambda _m: self.chat_action.setEnabled(input_words(s.model).chat))
        self._action(m, "Go to the &stage list", self.navigator.setFocus, ["Esc"])
        self._action(m, "&Reset all toggles", s.reset_options, ["Ctrl+R"])

    def _build_view_menu(self, m: QMenu) -> None:
        dark = appsettings.read_bool(self.settings, appsettings.DARK)
        self.dark_action = self._action(m, "&Dark theme", self.set_dark, ["Ctrl+Shift+D"], "darkAction", True)
        self.dark_action.setChecked(dark)
        self._action(m, "&Full screen", self._toggle_full_screen, ["F11"])
        self.present_action = self._action(m, "&Present\tF5", self.set_presenting, ["F5"], "presentAction", True)
        self._action(
            m,
            "Zoom &in\tCtrl+=",
            lambda: self.set_zoom(zoom.step_zoom(self.zoom, 1)),
            ["Ctrl+=", "Ctrl++"],
            "zoomInAction",
        )
        self._action(
            m, "Zoom &out\tCtrl+−", lambda: self.set_zoom(zoom.step_zoom(self.zoom, -1)), ["Ctrl+-"], "zoomOutAction"
        )
        self._action(m, "&Reset zoom\tCtrl+0", lambda: self.set_zoom(1.0), ["Ctrl+0"], "zoomResetAction")
        m.addSeparator()
        s = self.session
        self._action(
            m,
            "&Pin this run as A (again: unpin)",
            lambda: s.unpin() if s.pinned is not None else s.pin(),
            ["Ctrl+P"],
            "pinAction",
        )
        self._action(
            m,
            "Next &compare view (off, A | B, A | B | B − A)",
            self._next_compare,
            ["Ctrl+Shift+P"],
            "nextCompareAction",
        )
        self._action(m, "Patching &map (A → B)…", self.open_patch_map, [], "patchMapAction")
        m.addSeparator()
        for dock in (self.nav_dock, self.schematic_dock, self.controls_dock):
            m.addAction(dock.toggleViewAction())
        self.model_view_dock = add_model_view(self, m)  # View → Whole-model attention (Ctrl+M)
        self._action(m, "&Quantization: W, Ŵ, |W − Ŵ|…", self._show_quantization, [], "quantizationAction")
        self._action(m, "&Head roles, sinks, score dimensions…", self._show_head_roles, [], "headRolesAction")
        self._action(m, "&LoRA adapter: B, A, ΔW; pin the base as A…", self._show_lora, [], "loraAction")

    def _show_head_roles(self) -> None:
        """The head-roles map, the attention-sink page and the neuron view (issue 37.3, 37.4)."""
        from attnlab.ui.window.head_roles_view import show_head_roles  # needs torch: not at start-up

        show_head_roles(self, self.session)

    def _open_chat(self) -> None:
        """The conversation editor (ui/window/chat_dialog.py), for a model with a chat template."""
        self._chat_dialog = open_chat_dialog(self.session, self)

    def _show_quantization(self) -> None:
        """W, Ŵ, |W − Ŵ| of a quantized model's weights; the original's run as A (issue 36.4)."""
        from attnlab.ui.stages.quantization import show_quantization  # ui/stages needs torch: not at start-up

        show_quantization(self)

    def _show_lora(self) -> None:
        """B, A and ΔW of a LoRA adapter's modules; the base model's run as A (issue 35.1)."""
        from attnlab.ui.stages.lora import show_lora  # ui/stages needs torch: not at start-up

        show_lora(self)

    def step(self, delta: int) -> None:
        """The clicker: the next step of a playing lesson, else the next stage."""
        if not lesson_step(self, delta):
            self.session.step_stage(delta)

    def open_patch_map(self) -> None:
        """View → Patching map: run A (pinned) patched into run B, layer by layer (ui/window/patch_map.py)."""
        from attnlab.ui.window.patch_map import PatchMapWindow

        self.patch_map_window = PatchMapWindow(self.session)
        self.patch_map_window.show()

    def _next_compare(self) -> None:
        from attnlab.present.stages import COMPARE_MODES

        s = self.session
        if s.pinned is None:
            s.notice.emit("Pin a run as A first (Ctrl+P), then change something: the comparison shows A and B.")
            return
        modes = [m for m, _ in COMPARE_MODES]
        s.set_view(compare=modes[(modes.index(s.view.compare) + 1) % len(modes)])

    def _focus(self, edit: QLineEdit) -> None:
        self.edit_text(edit)  # presenting, the box keeps its keys from now on (clicker.py)
        edit.selectAll()

    def _toggle_full_screen(self) -> None:
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    def show_shortcuts(self) -> None:
        QMessageBox.information(self, "Keyboard shortcuts", SHORTCUTS_HTML)
