"""The LoRA adapter window (issue 35.1): for one adapted module, B | A | ΔW = scaling · B · A with its rank and
scaling, and a button that pins the base model's run (strength 0) on the window's sentence as A, so Compare shows
A | B | B − A for every stage of the adapted run. It draws present/lora.py's view-model and computes nothing.

A window (View → LoRA adapter…), not a stage: the adapter's matrices do not change with the sentence, and the
stage list is built from a run's trace, which holds activations, not weights."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.present.views.model import MessageView
from attnlab.ui.stages.three_maps import ThreeMaps
from attnlab.ui.window.geometry import resize_for_screen

if TYPE_CHECKING:
    from attnlab.present.lora import LoraView
    from attnlab.ui.window.window_host import WindowHost

COLORMAP = "RdBu_r"


class LoraPanel(QtWidgets.QWidget):
    """A module chooser, three heatmaps (B, A, ΔW) and the notes under them."""

    moduleChosen = Signal(str)
    pinRequested = Signal()  # "Pin the base model's run as A"

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("loraPanel")
        self.modules = QtWidgets.QComboBox(self)
        self.modules.setObjectName("loraModuleCombo")
        self.modules.currentTextChanged.connect(lambda name: self.moduleChosen.emit(name) if name else None)
        self.pin_button = QtWidgets.QPushButton("Pin the base model's run as A (Compare)", self)
        self.pin_button.setObjectName("pinBaseButton")
        self.pin_button.clicked.connect(self.pinRequested.emit)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.modules, 1)
        row.addWidget(self.pin_button)
        parts = ThreeMaps(self, note_lines=2)
        self._parts = parts
        outer = QtWidgets.QVBoxLayout(self)
        outer.addLayout(row)
        outer.addWidget(parts.stack, 1)
        self._data: dict = {}

    def set_modules(self, names: list[str]) -> None:
        self.modules.blockSignals(True)
        self.modules.clear()
        self.modules.addItems(names)
        self.modules.blockSignals(False)

    def show_view(self, view: LoraView | MessageView) -> None:
        if isinstance(view, MessageView):
            self._data = self._parts.show_message(view.message)
            return
        self._data = {
            "module": view.module,
            "rank": view.rank,
            **self._parts.show(view.heading, view.maps, view.notes, COLORMAP),
        }

    def shown_data(self) -> dict:
        return dict(self._data)


class LoraWindow(QtWidgets.QWidget):
    """The panel with what it needs from the main window: the open model and its session (to pin)."""

    def __init__(self, window: WindowHost):
        from attnlab.present import lora  # torch: only once the window opens

        super().__init__(window, Qt.WindowType.Window)
        self.setObjectName("loraWindow")
        self.setWindowTitle("LoRA adapter: B, A and ΔW = scaling · B · A")
        self.host = window
        self.panel = LoraPanel(self)
        QtWidgets.QVBoxLayout(self).addWidget(self.panel)
        self.panel.moduleChosen.connect(self.show_module)
        self.panel.pinRequested.connect(self.pin_base)
        names = lora.adapter_modules(window.session.model)
        self.panel.set_modules(names)
        self.show_module(names[0] if names else "")
        resize_for_screen(self, 1100, 520)

    def show_module(self, name: str) -> None:
        from attnlab.present import lora

        s = self.host.session
        self.panel.show_view(lora.lora_view(s.model, name, lora.strength_of(s.options)))

    def pin_base(self) -> None:
        """The base model's run (strength 0) on the window's sentence, pinned as A (B: the adapted runs)."""
        from attnlab.present import lora

        s = self.host.session
        if s.model is None:
            return
        if s.busy:  # the worker is running this model: its weights are not to be written meanwhile
            self.host.statusBar().showMessage("A run is under way: pin the base model's run when it is done")
            return
        tgt = list(s.tgt_ids) if s.tgt_ids is not None else s.tgt
        try:
            run = lora.base_run(s.model, s.src, tgt, s.options)
        except ValueError as e:  # InputError, OptionsError: one line
            self.host.statusBar().showMessage(str(e).splitlines()[0])
            return
        s.pin(run)
        self.host.statusBar().showMessage("A: the base model (strength 0); B: the adapted model (B − A: Compare)")


def show_lora(window: WindowHost) -> None:
    from attnlab.present import lora

    if not lora.adapter_modules(window.session.model):
        window.statusBar().showMessage(lora.NO_ADAPTER)
        return
    view = LoraWindow(window)
    view.show()
    window.lora_window = view  # type: ignore[attr-defined]  # kept alive while open
