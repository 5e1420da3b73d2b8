"""File → New random model…: the sizes of an untrained model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QSpinBox, QWidget

from attnlab.present.model_info import (
    ARCHITECTURE_CHOICES,
    POSITIONAL_CHOICES,
    config_problems,
    config_sizes,
    default_config,
    random_config,
)

if TYPE_CHECKING:
    from attnlab.present.engine_api import ModelConfig


class RandomModelDialog(QDialog):
    """File → New random model…: the sizes of an untrained model, to compare with a trained one."""

    def __init__(self, base: ModelConfig | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("New random model")
        sizes = config_sizes(base or default_config())
        self.arch = QComboBox()
        self.arch.setObjectName("archCombo")
        self.arch.addItems(list(ARCHITECTURE_CHOICES))
        self.arch.setCurrentText(str(sizes["arch"]))
        self.d_model = spin_box("dModelSpin", 4, 1024, int(sizes["d_model"]), step=4)
        self.n_heads = spin_box("nHeadsSpin", 1, 64, int(sizes["n_heads"]))
        self.d_ff = spin_box("dFFSpin", 4, 8192, int(sizes["d_ff"]), step=32)
        self.layers = spin_box("layersSpin", 1, 12, int(sizes["layers"]))
        self.positional = QComboBox()
        self.positional.setObjectName("positionalCombo")
        self.positional.addItems(list(POSITIONAL_CHOICES))
        self.positional.setCurrentText(str(sizes["positional"]))
        self.seed = spin_box("seedSpin", 0, 2**31 - 1, 0)
        self.problem = QLabel()
        self.problem.setStyleSheet("color: #b00020")
        self.problem.setWordWrap(True)
        buttons = QDialogButtonBox.StandardButton
        self.buttons = QDialogButtonBox(buttons.Ok | buttons.Cancel)
        form = QFormLayout(self)
        for label, w in (
            ("Architecture", self.arch),
            ("d_model", self.d_model),
            ("Heads", self.n_heads),
            ("d_ff", self.d_ff),
            ("Layers per stack", self.layers),
            ("Positional", self.positional),
            ("Seed", self.seed),
        ):
            form.addRow(label, w)
        form.addRow(self.problem)
        form.addRow(self.buttons)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        for w in (self.d_model, self.n_heads, self.d_ff, self.layers):
            w.valueChanged.connect(self._check)
        for w in (self.arch, self.positional):
            w.currentTextChanged.connect(self._check)
        self._check()

    def config(self) -> ModelConfig:
        return random_config(
            self.arch.currentText(),
            self.d_model.value(),
            self.n_heads.value(),
            self.d_ff.value(),
            self.layers.value(),
            self.positional.currentText(),
        )

    def _check(self) -> None:
        problems = config_problems(self.config())
        self.problem.setText("\n".join(problems))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problems)


def spin_box(name: str, least: int, most: int, value: int, step: int = 1) -> QSpinBox:
    spin = QSpinBox(minimum=least, maximum=most, singleStep=step, value=value)
    spin.setObjectName(name)
    return spin
