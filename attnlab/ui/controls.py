"""The toggles (bound two-way to the session's RunOptions and ViewState), the sentence inputs, and the
"New random model" dialog.

Widgets write to the session; the session's signals write back into the widgets with their signals
blocked, so syncing never triggers another change.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from attnlab.engine.config import ARCHITECTURES, POSITIONALS, ModelConfig
from attnlab.engine.options import head_choices
from attnlab.session import Session

NORM_CHOICES = (("trained", "As trained"), ("pre", "Pre-norm"), ("post", "Post-norm"))


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _check(name: str, text: str, tip: str) -> QCheckBox:
    box = QCheckBox(text)
    box.setObjectName(name)
    box.setToolTip(tip)
    return box


class ControlsPanel(QWidget):
    """Every what-if toggle of RunOptions plus the view choices (head, colour map)."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("controls")
        self.session = session
        s = session

        self.norm = QComboBox(objectName="normCombo", toolTip="Where LayerNorm sits around each sub-layer")
        for value, text in NORM_CHOICES:
            self.norm.addItem(text, value)
        self.heads = QComboBox(objectName="headsCombo",
                               toolTip="Re-split the same W_Q, W_K, W_V, W_O into this many heads")
        self.head = QSpinBox(objectName="headSpin", prefix="head ", minimum=0, maximum=0,
                             toolTip="The head shown by the single-head panels (or click one in 'all heads')")
        shape = QGroupBox("Shape of the computation")
        form = QFormLayout(shape)
        form.addRow("LayerNorm", self.norm)
        form.addRow("Heads", self.heads)
        form.addRow("Show", self.head)

        self.causal = _check("causalCheck", "Causal mask (decoder)",
                             "Decoder self-attention may not look at later tokens")
        self.enc_causal = _check("encCausalCheck", "Causal mask (encoder)",
                                 "Also hide later tokens from the encoder (it normally sees them all)")
        self.padding = _check("paddingCheck", "Padding mask", "Block attention to <pad> tokens")
        self.pad_to = QSpinBox(objectName="padToSpin", minimum=0, maximum=256, specialValueText="no padding",
                               toolTip="Pad the inputs with <pad> up to this many tokens")
        self.clear_mask = QPushButton("Clear custom mask", objectName="clearMaskButton",
                                      toolTip="Unblock every cell you clicked on a mask panel")
        self.mask_info = QLabel()
        self.mask_info.setWordWrap(True)
        masks = QGroupBox("Masks")
        box = QVBoxLayout(masks)
        for w in (self.causal, self.enc_causal, self.padding):
            box.addWidget(w)
        pad_row = QHBoxLayout()
        pad_row.addWidget(QLabel("Pad to"))
        pad_row.addWidget(self.pad_to, 1)
        box.addLayout(pad_row)
        box.addWidget(self.mask_info)
        box.addWidget(self.clear_mask)

        self.scale = _check("scaleCheck", "Divide scores by √dₖ", "Scale QKᵀ by 1/√dₖ before the softmax")
        self.positional = _check("positionalCheck", "Positional encoding", "Add the position to each token")
        self.residual = _check("residualCheck", "Residual connections", "The x + sublayer(x) skip paths")
        parts = QGroupBox("Switch parts off")
        box = QVBoxLayout(parts)
        for w in (self.scale, self.positional, self.residual):
            box.addWidget(w)

        self.temperature = QDoubleSpinBox(objectName="temperatureSpin", minimum=0.1, maximum=5.0,
                                          singleStep=0.1, decimals=2, value=1.0,
                                          toolTip="softmax(logits / T): low T sharpens, high T flattens")
        self.temperature_slider = QSlider(Qt.Orientation.Horizontal, objectName="temperatureSlider",
                                          minimum=10, maximum=500, value=100)
        self.device = QComboBox(objectName="deviceCombo", toolTip="Where the model runs")
        self.device.addItem("CPU", "cpu")
        self.device.addItem("GPU (CUDA)", "cuda")
        self.colormap = QComboBox(objectName="colormapCombo", toolTip="Colours of every heatmap")
        self.reset = QPushButton("Reset all toggles", objectName="resetOptionsButton")
        output = QGroupBox("Output and display")
        form = QFormLayout(output)
        temp_row = QHBoxLayout()
        temp_row.addWidget(self.temperature_slider, 1)
        temp_row.addWidget(self.temperature)
        form.addRow("Temperature", temp_row)
        form.addRow("Device", self.device)
        form.addRow("Colours", self.colormap)

        layout = QVBoxLayout(self)
        for w in (shape, masks, parts, output, self.reset):
            layout.addWidget(w)
        layout.addStretch(1)

        self.norm.activated.connect(lambda _i: s.update_options(norm=self.norm.currentData()))
        self.heads.activated.connect(lambda _i: self._set_heads(self.heads.currentData()))
        self.head.valueChanged.connect(lambda v: s.set_view(head=v))
        self.causal.toggled.connect(lambda on: s.set_options(s.options.with_causal("dec.self", on)))
        self.enc_causal.toggled.connect(lambda on: s.set_options(s.options.with_causal("enc.self", on)))
        self.padding.toggled.connect(lambda on: s.update_options(padding_mask=on))
        self.pad_to.valueChanged.connect(lambda v: s.update_options(pad_to=v))
        self.clear_mask.clicked.connect(s.clear_custom_masks)
        self.scale.toggled.connect(lambda on: s.update_options(scale=on))
        self.positional.toggled.connect(lambda on: s.update_options(positional=on))
        self.residual.toggled.connect(lambda on: s.update_options(residual=on))
        self.temperature.valueChanged.connect(lambda v: s.update_options(temperature=round(v, 2)))
        self.temperature_slider.valueChanged.connect(lambda v: self.temperature.setValue(v / 100))
        self.device.activated.connect(lambda _i: s.update_options(device=self.device.currentData()))
        self.colormap.currentTextChanged.connect(lambda name: s.set_view(colormap=name))
        self.reset.clicked.connect(s.reset_options)
        s.modelChanged.connect(lambda _m: self.sync())
        s.optionsChanged.connect(lambda _o: self.sync())
        s.viewChanged.connect(lambda _v: self.sync())
        s.traceReady.connect(lambda _t: self.sync())
        self.sync()

    def _set_heads(self, n: int) -> None:
        config = self.session.model.config if self.session.model else None
        self.session.update_options(n_heads=None if config and n == config.n_heads else n)

    def sync(self) -> None:
        """Show the session's state; emits nothing."""
        widgets = (self.norm, self.heads, self.head, self.causal, self.enc_causal, self.padding, self.pad_to,
                   self.scale, self.positional, self.residual, self.temperature, self.temperature_slider,
                   self.device, self.colormap)
        blockers = [QSignalBlocker(w) for w in widgets]
        try:
            self._sync(self.session)
        finally:
            del blockers

    def _sync(self, s: Session) -> None:
        opts, view, model = s.options, s.view, s.model
        config = model.config if model else None
        self.setEnabled(model is not None)
        if config is None:
            return
        trained = "pre-norm" if config.norm_first else "post-norm"
        self.norm.setItemText(0, f"As trained ({trained})")
        self.norm.setCurrentIndex(max(0, self.norm.findData(opts.norm)))
        choices = head_choices(config)
        if [self.heads.itemData(i) for i in range(self.heads.count())] != choices:
            self.heads.clear()
            for h in choices:
                self.heads.addItem(f"{h} (trained)" if h == config.n_heads else str(h), h)
        n_heads = opts.effective_heads(config)
        self.heads.setCurrentIndex(max(0, self.heads.findData(n_heads)))
        self.head.setMaximum(n_heads - 1)
        self.head.setSuffix(f" of {n_heads}")
        self.head.setValue(min(view.head, n_heads - 1))
        self.causal.setEnabled(config.has_decoder)
        self.causal.setChecked(config.has_decoder and opts.is_causal("dec.0.self"))
        self.enc_causal.setEnabled(config.has_encoder)
        self.enc_causal.setChecked(config.has_encoder and opts.is_causal("enc.0.self"))
        self.padding.setChecked(opts.padding_mask)
        self.pad_to.setMaximum(config.max_len)
        self.pad_to.setValue(opts.pad_to)
        cells = sum(len(c) for _, c in opts.custom_masks)
        self.mask_info.setText(f"{cells} cell(s) blocked by hand" if cells else
                               "Click cells on a 'mask' stage to block them by hand.")
        self.clear_mask.setEnabled(bool(cells))
        self.scale.setChecked(opts.scale)
        self.positional.setEnabled(config.positional != "none")
        self.positional.setChecked(opts.positional and config.positional != "none")
        self.residual.setChecked(opts.residual)
        self.temperature.setValue(opts.temperature)
        self.temperature_slider.setValue(round(opts.temperature * 100))
        cuda = cuda_available()
        self.device.model().item(1).setEnabled(cuda)
        device = opts.device if opts.device != "auto" else ("cuda" if cuda else "cpu")
        self.device.setCurrentIndex(max(0, self.device.findData(device)))
        if not self.colormap.count():  # filled late: the list lives with pyqtgraph, imported on first use
            from attnlab.ui.colormaps import COLORMAPS

            self.colormap.addItems(COLORMAPS)
        self.colormap.setCurrentIndex(max(0, self.colormap.findText(view.colormap)))


class InputBar(QWidget):
    """Source sentence (live re-trace as you type), decoder input, "Generate next token" and "Clear"."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.src = QLineEdit(objectName="srcEdit", placeholderText="Type a sentence…",
                             clearButtonEnabled=True)
        self.tgt = QLineEdit(objectName="tgtEdit", clearButtonEnabled=True,
                             placeholderText="Decoder input (teacher forcing) — empty, or Generate")
        self.src_label = QLabel("&Source:")
        self.src_label.setBuddy(self.src)
        self.tgt_label = QLabel("&Decoder input:")
        self.tgt_label.setBuddy(self.tgt)
        self.generate = QPushButton("Generate next token", objectName="generateButton",
                                    toolTip="Append the model's most probable next token (Ctrl+G)")
        self.clear = QPushButton("Clear", objectName="clearTgtButton", toolTip="Empty the decoder input")
        for button in (self.generate, self.clear):  # stay button-sized when the decoder box is hidden
            button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        layout = QFormLayout(self)
        layout.setContentsMargins(8, 6, 8, 2)
        layout.addRow(self.src_label, self.src)
        row = QHBoxLayout()
        row.addWidget(self.tgt, 1)
        row.addWidget(self.generate)
        row.addWidget(self.clear)
        row.addStretch(0)
        layout.addRow(self.tgt_label, row)
        self.src.textEdited.connect(session.set_src)
        self.tgt.textEdited.connect(session.set_tgt)
        self.generate.clicked.connect(session.generate_next)
        self.clear.clicked.connect(session.reset_tgt)
        session.textsChanged.connect(self.sync)
        session.modelChanged.connect(lambda _m: self.sync())

    def sync(self) -> None:
        s = self.session
        for edit, text in ((self.src, s.src), (self.tgt, s.tgt)):
            if edit.text() != text:
                edit.setText(text)
        arch = s.model.config.arch if s.model else "encoder-decoder"
        self.src_label.setText("&Prompt:" if arch == "decoder-only" else "&Source:")
        show_tgt = arch == "encoder-decoder"
        for w in (self.tgt_label, self.tgt, self.clear):
            w.setVisible(show_tgt)
        self.generate.setVisible(arch != "encoder-only")


class RandomModelDialog(QDialog):
    """File → New random model…: the sizes of an untrained model, to compare with a trained one."""

    def __init__(self, base: ModelConfig | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("New random model")
        base = base or ModelConfig()
        self.arch = QComboBox(objectName="archCombo")
        self.arch.addItems(list(ARCHITECTURES))
        self.arch.setCurrentText(base.arch)
        self.d_model = QSpinBox(objectName="dModelSpin", minimum=4, maximum=1024, singleStep=4,
                                value=base.d_model)
        self.n_heads = QSpinBox(objectName="nHeadsSpin", minimum=1, maximum=64, value=base.n_heads)
        self.d_ff = QSpinBox(objectName="dFFSpin", minimum=4, maximum=8192, singleStep=32, value=base.d_ff)
        self.layers = QSpinBox(objectName="layersSpin", minimum=1, maximum=12,
                               value=max(base.n_encoder_layers, base.n_decoder_layers))
        self.positional = QComboBox(objectName="positionalCombo")
        self.positional.addItems(list(POSITIONALS))
        self.positional.setCurrentText(base.positional)
        self.seed = QSpinBox(objectName="seedSpin", minimum=0, maximum=2**31 - 1, value=0)
        self.problem = QLabel(styleSheet="color: #b00020")
        self.problem.setWordWrap(True)
        buttons = QDialogButtonBox.StandardButton
        self.buttons = QDialogButtonBox(buttons.Ok | buttons.Cancel)
        form = QFormLayout(self)
        for label, w in (("Architecture", self.arch), ("d_model", self.d_model), ("Heads", self.n_heads),
                         ("d_ff", self.d_ff), ("Layers per stack", self.layers),
                         ("Positional", self.positional), ("Seed", self.seed)):
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
        return ModelConfig(arch=self.arch.currentText(), d_model=self.d_model.value(),
                           n_heads=self.n_heads.value(), d_ff=self.d_ff.value(), n_encoder_layers=n,
                           n_decoder_layers=n,
                           positional=self.positional.currentText())

    def _check(self) -> None:
        problems = self.config().problems()
        self.problem.setText("\n".join(problems))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problems)
