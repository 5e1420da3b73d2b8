"""How each control of the toggles panel is built, and how it shows the session's state (and, where a click
needs more than one call, how it writes): the functions the rows of control_rows.ROWS are made of.

A `build_*` makes the widget(s) and keeps them as attributes of the panel; a `read_*` shows the session's state
in them (the panel blocks their signals meanwhile); a `write_*` sends a person's change to the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLayout,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from attnlab.present.engine_api import ModelConfig, RunOptions, head_choices
from attnlab.present.stages import COLOUR_SCALES
from attnlab.session import Session

if TYPE_CHECKING:
    from attnlab.ui.control_rows import Reader
    from attnlab.ui.controls import ControlsPanel

NORM_CHOICES = (("trained", "As trained"), ("pre", "Pre-norm"), ("post", "Post-norm"))  # RunOptions.norm values


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def row_layout(*widgets: QWidget, stretch_first: bool = True) -> QHBoxLayout:
    row = QHBoxLayout()
    for i, w in enumerate(widgets):
        row.addWidget(w, 1 if stretch_first and i == 0 else 0)
    return row


# norm ---------------------------------------------------------------------------------------------------
def build_norm(p: ControlsPanel) -> QWidget:
    p.norm = QComboBox(objectName="normCombo", toolTip="Where LayerNorm sits around each sub-layer")
    for value, text in NORM_CHOICES:
        p.norm.addItem(text, value)
    return p.norm


def read_norm(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    trained = RunOptions().resolved(config).norm  # "pre" or "post": the form every consumer reads
    kind = "RMSNorm" if config.norm == "rmsnorm" else "LayerNorm"
    p.norm.setToolTip(f"Where {kind} sits around each sub-layer (the same trained norms, moved)")
    p.norm.setItemText(0, f"As trained ({dict(NORM_CHOICES)[trained].lower()})")
    p.norm.setCurrentIndex(max(0, p.norm.findData(s.options.norm)))


# heads ---------------------------------------------------------------------------------------------------
def heads_tip(config: ModelConfig) -> str:
    """Why the Heads list holds the counts it holds (grouped-query attention allows fewer)."""
    tip = "Re-split the same W_Q, W_K, W_V, W_O into this many heads"
    if config.kv_heads < config.n_heads:
        tip += (
            f". Grouped-query attention ({config.n_heads} Q heads share {config.kv_heads} K/V heads): only "
            "counts that keep the Q heads a whole multiple of the K/V heads are listed, so no K/V head is "
            "cut apart"
        )
    if config.positional == "rotary":
        tip += "; rotary positions need an even head size"
    return tip


def build_heads(p: ControlsPanel) -> QWidget:
    p.heads = QComboBox(objectName="headsCombo", toolTip="Re-split the same W_Q, W_K, W_V, W_O into this many heads")
    return p.heads


def write_heads(p: ControlsPanel, s: Session) -> None:
    n = p.heads.currentData()
    trained = s.model.config.n_heads if s.model else None
    s.update_options(n_heads=None if n == trained else n)


def read_heads(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    choices = head_choices(config)
    p.heads.setToolTip(heads_tip(config))
    if [p.heads.itemData(i) for i in range(p.heads.count())] != choices:
        p.heads.clear()
        for h in choices:
            p.heads.addItem(f"{h} (trained)" if h == config.n_heads else str(h), h)
    p.heads.setCurrentIndex(max(0, p.heads.findData(s.options.effective_heads(config))))


def build_head(p: ControlsPanel) -> QWidget:
    # people count heads from 1 ("head 1 of 4"); ViewState.head and the trace count from 0
    p.head = QSpinBox(
        objectName="headSpin",
        prefix="head ",
        minimum=1,
        maximum=1,
        toolTip="The head shown by the single-head panels (or click one in 'all heads')",
    )
    return p.head


def read_head(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    n_heads = s.options.effective_heads(config)
    p.head.setMaximum(n_heads)
    p.head.setSuffix(f" of {n_heads}")
    p.head.setValue(min(s.view.head, n_heads - 1) + 1)


# final norm ----------------------------------------------------------------------------------------------
def read_final_norm(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    """Checked when this run normalises each stack's output; enabled where the toggle means something: a
    pre-norm run of a model trained without a final norm, a model that has one (to skip it), or a choice made."""
    o = s.options
    pre = o.effective_norm_first(config)
    p.final_norm.setEnabled(config.final_norm or pre or o.final_norm is not None)
    p.final_norm.setChecked(config.final_norm if o.final_norm is None else o.final_norm)


def write_final_norm(s: Session, on: bool) -> None:
    trained = s.model.config.final_norm if s.model else False
    s.update_options(final_norm=None if on == trained else on)


# masks ---------------------------------------------------------------------------------------------------
CAUSAL_TIPS = {
    "dec": "Decoder self-attention may not look at later tokens",
    "enc": "Also hide later tokens from the encoder (it normally sees them all)",
}
POSITIONAL_TIPS = {
    "sinusoidal": "Add the position to each token",
    "learned": "Add the learned position vector to each token",
    "rotary": "Rotate Q and K by each token's position inside every attention (rotary encoding)",
    "none": "Not meaningful for this model: it has no positional encoding",
}


def read_causal(kind: str) -> Reader:
    def read(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
        box, present = (p.causal, config.has_decoder) if kind == "dec" else (p.enc_causal, config.has_encoder)
        box.setEnabled(present)
        box.setToolTip(
            CAUSAL_TIPS[kind]
            if present
            else f"Not meaningful for this model: it has no {'decoder' if kind == 'dec' else 'encoder'} ({config.arch})"
        )
        box.setChecked(present and s.options.is_causal(f"{kind}.0.self"))

    return read


def build_pad_to(p: ControlsPanel) -> QWidget:
    p.pad_to = QSpinBox(
        objectName="padToSpin",
        minimum=0,
        maximum=256,
        specialValueText="no padding",
        toolTip="Pad the inputs with <pad> up to this many tokens",
    )
    return p.pad_to


def read_pad_to(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    p.pad_to.setMaximum(config.max_len)
    p.pad_to.setValue(s.options.pad_to)


def build_custom_mask(p: ControlsPanel) -> QWidget:
    p.mask_info = QLabel(wordWrap=True)
    p.clear_mask = QPushButton(
        "Clear custom mask", objectName="clearMaskButton", toolTip="Unblock every cell you clicked on a mask panel"
    )
    box = QWidget()
    column = QVBoxLayout(box)
    column.setContentsMargins(0, 0, 0, 0)
    column.addWidget(p.mask_info)
    column.addWidget(p.clear_mask)
    return box


def read_custom_mask(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    cells = sum(len(c) for _, c in s.options.custom_masks)
    p.mask_info.setText(
        f"{cells} cell(s) blocked by hand" if cells else "Click cells on a 'mask' stage to block them by hand."
    )
    p.clear_mask.setEnabled(bool(cells))


def read_positional(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    has_positions = config.positional != "none"
    p.positional.setEnabled(has_positions)
    p.positional.setText("Rotary positions (RoPE)" if config.positional == "rotary" else "Positional encoding")
    p.positional.setToolTip(POSITIONAL_TIPS.get(config.positional, POSITIONAL_TIPS["sinusoidal"]))
    p.positional.setChecked(s.options.positional and has_positions)


# output and display ----------------------------------------------------------------------------------------
def build_temperature(p: ControlsPanel) -> QLayout:
    p.temperature = QDoubleSpinBox(
        objectName="temperatureSpin",
        minimum=0.1,
        maximum=5.0,
        singleStep=0.1,
        decimals=2,
        value=1.0,
        toolTip="softmax(logits / T): low T sharpens, high T flattens",
    )
    p.temperature_slider = QSlider(
        Qt.Orientation.Horizontal, objectName="temperatureSlider", minimum=10, maximum=500, value=100
    )
    return row_layout(p.temperature_slider, p.temperature)


def connect_temperature(p: ControlsPanel, s: Session) -> None:
    p.temperature.valueChanged.connect(lambda v: s.update_options(temperature=round(v, 2)))
    p.temperature_slider.valueChanged.connect(lambda v: p.temperature.setValue(v / 100))


def read_temperature(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    p.temperature.setValue(s.options.temperature)
    p.temperature_slider.setValue(round(s.options.temperature * 100))


def build_device(p: ControlsPanel) -> QWidget:
    p.device = QComboBox(objectName="deviceCombo", toolTip="Where the model runs")
    p.device.addItem("CPU", "cpu")
    p.device.addItem("GPU (CUDA)", "cuda")
    return p.device


def read_device(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    cuda = cuda_available()
    p.device.model().item(1).setEnabled(cuda)
    device = s.options.device if s.options.device != "auto" else ("cuda" if cuda else "cpu")
    p.device.setCurrentIndex(max(0, p.device.findData(device)))


def build_colour_scale(p: ControlsPanel) -> QWidget:
    p.colour_scale = QComboBox(
        objectName="colourScaleCombo",
        toolTip="Colour scale of an attention site's QKᵀ, ÷√dₖ and masked maps: shared, so "
        "the division by √dₖ is seen; per panel; or one fixed range",
    )
    for value, text in COLOUR_SCALES:
        p.colour_scale.addItem(text, value)
    return p.colour_scale


def read_colour_scale(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    p.colour_scale.setCurrentIndex(max(0, p.colour_scale.findData(s.view.colour_scale)))


def build_colormap(p: ControlsPanel) -> QWidget:
    p.colormap = QComboBox(objectName="colormapCombo", toolTip="Colours of every heatmap")
    return p.colormap


def read_colormap(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    if not p.colormap.count():  # filled late: the list lives with pyqtgraph, imported on first use
        from attnlab.ui.colormaps import COLORMAPS

        p.colormap.addItems(COLORMAPS)
    p.colormap.setCurrentIndex(max(0, p.colormap.findText(s.view.colormap)))
