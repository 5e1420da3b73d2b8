"""File → New random model…: the sizes of an untrained model."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QSpinBox, QWidget

from attnlab.present.engine_api import ARCHITECTURES, POSITIONALS, ModelConfig


class RandomModelDialog(QDialog):
    """File → New random model…: the sizes of an untrained model, to compare with a trained one."""

    def __init__(self, base: ModelConfig | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("New random model")
        base = base or ModelConfig()
        self.arch = QComboBox()
        self.arch.setObjectName("archCombo")
        self.arch.addItems(list(ARCHITECTURES))
        self.arch.setCurrentText(base.arch)
        self.d_model = spin_box("dModelSpin", 4, 1024, base.d_model, step=4)
        self.n_heads = spin_box("nHeadsSpin", 1, 64, base.n_heads)
        self.d_ff = spin_box("dFFSpin", 4, 8192, base.d_ff, step=32)
        self.layers = spin_box("layersSpin", 1, 12, max(base.n_encoder_layers, base.n_decoder_layers))
        self.positional = QComboBox()
        self.positional.setObjectName("positionalCombo")
        self.positional.addItems(list(POSITIONALS))
        self.positional.setCurrentText(base.positional)
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
        n = self.layers.value()
        return ModelConfig(
            arch=self.arch.currentText(),  # type: ignore[arg-type]  # one of ARCHITECTURES: the combo offers no other
            d_model=self.d_model.value(),
            n_heads=self.n_heads.value(),
            d_ff=self.d_ff.value(),
            n_encoder_layers=n,
            n_decoder_layers=n,
            positional=self.positional.currentText(),  # type: ignore[arg-type]  # one of POSITIONALS, as above
        )

    def _check(self) -> None:
        problems = self.config().problems()
        self.problem.setText("\n".join(problems))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problems)


def spin_box(name: str, least: int, most: int, value: int, step: int = 1) -> QSpinBox:
    spin = QSpinBox(minimum=least, maximum=most, singleStep=step, value=value)
    spin.setObjectName(name)
    return spin
