"""The quantization panel (issue 36.4): one linear weight of a dequantized model, W | Ŵ | |W − Ŵ| when the
full-precision original is at hand, else the stored levels | block scales | Ŵ; and a button that pins the
original's run on the window's sentence as A, so Compare (View → next compare view) shows A | B | B − A for every
stage of the quantized model's run. It draws present/quantization.py's view-model and computes nothing.

It opens in its own window (View → Quantization…): the weights do not change with the sentence, so it is no stage
of a run (the stage list is built from a run's trace, which does not say how the weights were stored)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets
from PySide6.QtCore import Qt, Signal

from attnlab.present.views.model import MessageView
from attnlab.ui.stages.three_maps import ThreeMaps
from attnlab.ui.window.geometry import resize_for_screen

if TYPE_CHECKING:
    from attnlab.present.quantization import QuantizationView
    from attnlab.ui.window.window_host import WindowHost

COLORMAP = "viridis"


class QuantizationPanel(QtWidgets.QWidget):
    """A weight chooser, three heatmaps and the notes under them."""

    weightChosen = Signal(str)
    originalRequested = Signal()  # "Choose original…"
    pinRequested = Signal()  # "Pin the original's run as A"

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("quantizationPanel")
        self.weights = QtWidgets.QComboBox(self)
        self.weights.setObjectName("quantizedWeightCombo")
        self.weights.currentTextChanged.connect(lambda name: self.weightChosen.emit(name) if name else None)
        choose = QtWidgets.QPushButton("Choose the original…", self)
        choose.setObjectName("chooseOriginalButton")
        choose.clicked.connect(self.originalRequested.emit)
        self.pin_button = QtWidgets.QPushButton("Pin the original's run as A (Compare)", self)
        self.pin_button.setObjectName("pinOriginalButton")
        self.pin_button.clicked.connect(self.pinRequested.emit)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.weights, 1)
        row.addWidget(choose)
        row.addWidget(self.pin_button)
        parts = ThreeMaps(self, note_lines=3)
        self._parts = parts
        outer = QtWidgets.QVBoxLayout(self)
        outer.addLayout(row)
        outer.addWidget(parts.stack, 1)
        self._data: dict = {}

    def set_weights(self, names: list[str]) -> None:
        self.weights.blockSignals(True)
        self.weights.clear()
        self.weights.addItems(names)
        self.weights.blockSignals(False)

    def show_view(self, view: QuantizationView | MessageView, has_original: bool) -> None:
        self.pin_button.setEnabled(has_original)
        if isinstance(view, MessageView):
            self._data = self._parts.show_message(view.message)
            return
        self._data = {"weight": view.weight, **self._parts.show(view.heading, view.maps, view.notes, COLORMAP)}

    def shown_data(self) -> dict:
        return dict(self._data)


class QuantizationWindow(QtWidgets.QWidget):
    """The panel with what it needs from the main window: the open model's facts and its session (to pin)."""

    def __init__(self, window: WindowHost):
        from attnlab.present import quantization  # torch: only once the window opens (the first paint needs none)

        super().__init__(window, Qt.WindowType.Window)
        self.setObjectName("quantizationWindow")
        self.setWindowTitle("Quantization: W, Ŵ and |W − Ŵ|")
        self.host = window
        self.panel = QuantizationPanel(self)
        QtWidgets.QVBoxLayout(self).addWidget(self.panel)
        self.model_facts = quantization.model_metadata(window.session.model)
        try:
            self.original = quantization.original_of(self.model_facts)
        except ValueError:  # the folder's config.json names something unreadable: no original at hand
            self.original = None
        self.panel.weightChosen.connect(self.show_weight)
        self.panel.originalRequested.connect(self.choose_original)
        self.panel.pinRequested.connect(self.pin_original)
        names = quantization.weight_names(self.model_facts)
        self.panel.set_weights(names)
        self.show_weight(names[0] if names else "")
        resize_for_screen(self, 1100, 520)

    def show_weight(self, name: str) -> None:
        from attnlab.present import quantization

        view = quantization.quantization_view(self.model_facts, name, self.original)
        self.panel.show_view(view, self.original is not None)

    def choose_original(self) -> None:
        from attnlab.present import quantization

        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "The full-precision original's folder")
        if folder:
            self.original = quantization.original_of(self.model_facts, folder)
            self.show_weight(self.panel.weights.currentText())

    def pin_original(self) -> None:
        """The original's run on the window's sentence, pinned as A (B: the quantized model's runs)."""
        from attnlab.present import quantization

        s = self.host.session
        if self.original is None:
            return
        tgt = list(s.tgt_ids) if s.tgt_ids is not None else s.tgt
        try:
            run = quantization.original_run(quantization.load_original(self.original), s.src, tgt, s.options)
        except ValueError as e:  # CheckpointError, InputError: one line
            self.host.statusBar().showMessage(str(e).splitlines()[0])
            return
        s.pin(run)
        self.host.statusBar().showMessage("A: the full-precision original; B: the quantized model (B − A: Compare)")


def show_quantization(window: WindowHost) -> None:
    from attnlab.present import quantization

    meta = quantization.model_metadata(window.session.model)
    if quantization.quantization_fact(meta) is None:
        said = quantization.quantization_text(meta)
        window.statusBar().showMessage(
            f"The weights were {said}: W, Ŵ and |W − Ŵ| are shown for bitsandbytes, GPTQ and AWQ folders."
            if said
            else "The open model was not quantized: there is no Ŵ to show."
        )
        return
    view = QuantizationWindow(window)
    view.show()
    window.quantization_window = view  # type: ignore[attr-defined]  # kept alive while open
