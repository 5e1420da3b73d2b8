"""The toggles panel: one row per RunOptions field (and per view choice), bound two-way to the session.

ROWS is the table: each row says how its widget is built, wired, read back and which fields re-read it.
Widgets write to the session; the session's signals write back into the widgets of the changed fields only,
with their signals blocked, so syncing never triggers another change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLayout,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions, head_choices
from attnlab.present.stages import COLOUR_SCALES
from attnlab.session import Session
from attnlab.ui import controls_study as study

if TYPE_CHECKING:
    from attnlab.pipeline import ViewState

NORM_CHOICES = (("trained", "As trained"), ("pre", "Pre-norm"), ("post", "Post-norm"))  # RunOptions.norm values
ALL_FIELDS = None  # sync(ALL_FIELDS): re-read every row


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


# ---- the rows ------------------------------------------------------------------------------------------
# Each row binds one control to the session, both ways. `widgets` are the panel attributes it owns (their
# signals are blocked while it is re-read); `build` makes the widget placed in the group (it may hold several
# of them); `connect` wires the widgets' "a person changed me" signals to the session; `read` shows the
# session's state (called with signals blocked); `fields` are the RunOptions fields (or "view.<field>")
# whose change makes the row re-read.
Builder = Callable[["ControlsPanel"], QWidget | QLayout]
Reader = Callable[["ControlsPanel", Session, ModelConfig], None]
Connector = Callable[["ControlsPanel", Session], None]


@dataclass(frozen=True)
class Row:
    group: str
    label: str | None  # the form label; None: the widget spans the row (it carries its own text)
    widgets: tuple[str, ...]
    build: Builder
    connect: Connector
    read: Reader
    fields: frozenset[str]


def _check(name: str, text: str, tip: str) -> QCheckBox:
    return QCheckBox(text, objectName=name, toolTip=tip)


def _row_layout(*widgets: QWidget, stretch_first: bool = True) -> QHBoxLayout:
    row = QHBoxLayout()
    for i, w in enumerate(widgets):
        row.addWidget(w, 1 if stretch_first and i == 0 else 0)
    return row


def _checkbox_row(
    group: str,
    attr: str,
    name: str,
    text: str,
    tip: str,
    field: str | tuple[str, ...],
    read: Reader,
    write: Callable[[Session, bool], object],
) -> Row:
    """A checkbox for one boolean option: `write(session, on)` sends a click, `read` shows the option."""

    def build(p: ControlsPanel) -> QWidget:
        setattr(p, attr, _check(name, text, tip))
        return getattr(p, attr)

    def connect(p: ControlsPanel, s: Session) -> None:
        getattr(p, attr).toggled.connect(lambda on: write(s, on))

    return Row(group, None, (attr,), build, connect, read, frozenset((field,) if isinstance(field, str) else field))


# norm ---------------------------------------------------------------------------------------------------
def _build_norm(p: ControlsPanel) -> QWidget:
    p.norm = QComboBox(objectName="normCombo", toolTip="Where LayerNorm sits around each sub-layer")
    for value, text in NORM_CHOICES:
        p.norm.addItem(text, value)
    return p.norm


def _read_norm(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
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


def _build_heads(p: ControlsPanel) -> QWidget:
    p.heads = QComboBox(objectName="headsCombo", toolTip="Re-split the same W_Q, W_K, W_V, W_O into this many heads")
    return p.heads


def _write_heads(p: ControlsPanel, s: Session) -> None:
    n = p.heads.currentData()
    trained = s.model.config.n_heads if s.model else None
    s.update_options(n_heads=None if n == trained else n)


def _read_heads(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    choices = head_choices(config)
    p.heads.setToolTip(heads_tip(config))
    if [p.heads.itemData(i) for i in range(p.heads.count())] != choices:
        p.heads.clear()
        for h in choices:
            p.heads.addItem(f"{h} (trained)" if h == config.n_heads else str(h), h)
    p.heads.setCurrentIndex(max(0, p.heads.findData(s.options.effective_heads(config))))


def _build_head(p: ControlsPanel) -> QWidget:
    # people count heads from 1 ("head 1 of 4"); ViewState.head and the trace count from 0
    p.head = QSpinBox(
        objectName="headSpin",
        prefix="head ",
        minimum=1,
        maximum=1,
        toolTip="The head shown by the single-head panels (or click one in 'all heads')",
    )
    return p.head


def _read_head(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    n_heads = s.options.effective_heads(config)
    p.head.setMaximum(n_heads)
    p.head.setSuffix(f" of {n_heads}")
    p.head.setValue(min(s.view.head, n_heads - 1) + 1)


# final norm ----------------------------------------------------------------------------------------------
def _read_final_norm(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    """Checked when this run normalises each stack's output; enabled where the toggle means something: a
    pre-norm run of a model trained without a final norm, a model that has one (to skip it), or a choice made."""
    o = s.options
    pre = o.effective_norm_first(config)
    p.final_norm.setEnabled(config.final_norm or pre or o.final_norm is not None)
    p.final_norm.setChecked(config.final_norm if o.final_norm is None else o.final_norm)


def _write_final_norm(s: Session, on: bool) -> None:
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


def _read_causal(kind: str) -> Reader:
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


def _build_pad_to(p: ControlsPanel) -> QWidget:
    p.pad_to = QSpinBox(
        objectName="padToSpin",
        minimum=0,
        maximum=256,
        specialValueText="no padding",
        toolTip="Pad the inputs with <pad> up to this many tokens",
    )
    return p.pad_to


def _read_pad_to(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    p.pad_to.setMaximum(config.max_len)
    p.pad_to.setValue(s.options.pad_to)


def _build_custom_mask(p: ControlsPanel) -> QWidget:
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


def _read_custom_mask(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    cells = sum(len(c) for _, c in s.options.custom_masks)
    p.mask_info.setText(
        f"{cells} cell(s) blocked by hand" if cells else "Click cells on a 'mask' stage to block them by hand."
    )
    p.clear_mask.setEnabled(bool(cells))


def _read_positional(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    has_positions = config.positional != "none"
    p.positional.setEnabled(has_positions)
    p.positional.setText("Rotary positions (RoPE)" if config.positional == "rotary" else "Positional encoding")
    p.positional.setToolTip(POSITIONAL_TIPS.get(config.positional, POSITIONAL_TIPS["sinusoidal"]))
    p.positional.setChecked(s.options.positional and has_positions)


# output and display ----------------------------------------------------------------------------------------
def _build_temperature(p: ControlsPanel) -> QLayout:
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
    return _row_layout(p.temperature_slider, p.temperature)


def _connect_temperature(p: ControlsPanel, s: Session) -> None:
    p.temperature.valueChanged.connect(lambda v: s.update_options(temperature=round(v, 2)))
    p.temperature_slider.valueChanged.connect(lambda v: p.temperature.setValue(v / 100))


def _read_temperature(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    p.temperature.setValue(s.options.temperature)
    p.temperature_slider.setValue(round(s.options.temperature * 100))


def _build_device(p: ControlsPanel) -> QWidget:
    p.device = QComboBox(objectName="deviceCombo", toolTip="Where the model runs")
    p.device.addItem("CPU", "cpu")
    p.device.addItem("GPU (CUDA)", "cuda")
    return p.device


def _read_device(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    cuda = cuda_available()
    p.device.model().item(1).setEnabled(cuda)
    device = s.options.device if s.options.device != "auto" else ("cuda" if cuda else "cpu")
    p.device.setCurrentIndex(max(0, p.device.findData(device)))


def _build_colour_scale(p: ControlsPanel) -> QWidget:
    p.colour_scale = QComboBox(
        objectName="colourScaleCombo",
        toolTip="Colour scale of an attention site's QKᵀ, ÷√dₖ and masked maps: shared, so "
        "the division by √dₖ is seen; per panel; or one fixed range",
    )
    for value, text in COLOUR_SCALES:
        p.colour_scale.addItem(text, value)
    return p.colour_scale


def _read_colour_scale(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    p.colour_scale.setCurrentIndex(max(0, p.colour_scale.findData(s.view.colour_scale)))


def _build_colormap(p: ControlsPanel) -> QWidget:
    p.colormap = QComboBox(objectName="colormapCombo", toolTip="Colours of every heatmap")
    return p.colormap


def _read_colormap(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
    if not p.colormap.count():  # filled late: the list lives with pyqtgraph, imported on first use
        from attnlab.ui.colormaps import COLORMAPS

        p.colormap.addItems(COLORMAPS)
    p.colormap.setCurrentIndex(max(0, p.colormap.findText(s.view.colormap)))


def _activated(attr: str, write: Callable[[ControlsPanel, Session], object]) -> Connector:
    return lambda p, s: getattr(p, attr).activated.connect(lambda _i: write(p, s))


SHAPE, MASKS, PARTS, OUTPUT = "Shape of the computation", "Masks", "Switch parts off", "Output and display"
ROWS: tuple[Row, ...] = (
    Row(
        SHAPE,
        "LayerNorm",
        ("norm",),
        _build_norm,
        _activated("norm", lambda p, s: s.update_options(norm=p.norm.currentData())),
        _read_norm,
        frozenset({"norm"}),
    ),
    Row(
        SHAPE, "Heads", ("heads",), _build_heads, _activated("heads", _write_heads), _read_heads, frozenset({"n_heads"})
    ),
    Row(
        SHAPE,
        "Show",
        ("head",),
        _build_head,
        lambda p, s: p.head.valueChanged.connect(lambda v: s.set_view(head=v - 1)),
        _read_head,
        frozenset({"n_heads", "view.head"}),
    ),
    _checkbox_row(
        SHAPE,
        "final_norm",
        "finalNormCheck",
        "Final LayerNorm",
        "A LayerNorm after each stack's last layer: pre-norm models need one (a post-norm model switched "
        "to pre-norm gets a parameter-free one, γ = 1, β = 0)",
        ("final_norm", "norm"),
        _read_final_norm,
        _write_final_norm,
    ),
    Row(
        SHAPE,
        "Ablate head",
        ("ablate",),
        study.build_ablate,
        study.connect_ablate,
        study.read_ablate,
        frozenset({"ablate", "view.head", "stage"}),
    ),
    _checkbox_row(
        MASKS,
        "causal",
        "causalCheck",
        "Causal mask (decoder)",
        CAUSAL_TIPS["dec"],
        "causal",
        _read_causal("dec"),
        lambda s, on: s.set_options(s.options.with_causal("dec.self", on)),
    ),
    _checkbox_row(
        MASKS,
        "enc_causal",
        "encCausalCheck",
        "Causal mask (encoder)",
        CAUSAL_TIPS["enc"],
        "causal",
        _read_causal("enc"),
        lambda s, on: s.set_options(s.options.with_causal("enc.self", on)),
    ),
    _checkbox_row(
        MASKS,
        "padding",
        "paddingCheck",
        "Padding mask",
        "Block attention to <pad> tokens",
        "padding_mask",
        lambda p, s, _c: p.padding.setChecked(s.options.padding_mask),
        lambda s, on: s.update_options(padding_mask=on),
    ),
    Row(
        MASKS,
        "Pad to",
        ("pad_to",),
        _build_pad_to,
        lambda p, s: p.pad_to.valueChanged.connect(lambda v: s.update_options(pad_to=v)),
        _read_pad_to,
        frozenset({"pad_to"}),
    ),
    Row(
        MASKS,
        None,
        ("clear_mask",),
        _build_custom_mask,
        lambda p, s: p.clear_mask.clicked.connect(s.clear_custom_masks),
        _read_custom_mask,
        frozenset({"custom_masks"}),
    ),
    _checkbox_row(
        PARTS,
        "scale",
        "scaleCheck",
        "Divide scores by √dₖ",
        "Scale QKᵀ by 1/√dₖ before the softmax",
        "scale",
        lambda p, s, _c: p.scale.setChecked(s.options.scale),
        lambda s, on: s.update_options(scale=on),
    ),
    _checkbox_row(
        PARTS,
        "positional",
        "positionalCheck",
        "Positional encoding",
        "Add the position to each token",
        "positional",
        _read_positional,
        lambda s, on: s.update_options(positional=on),
    ),
    _checkbox_row(
        PARTS,
        "residual",
        "residualCheck",
        "Residual connections",
        "The x + sublayer(x) skip paths",
        "residual",
        lambda p, s, _c: p.residual.setChecked(s.options.residual),
        lambda s, on: s.update_options(residual=on),
    ),
    _checkbox_row(
        PARTS,
        "projections",
        "projectionsCheck",
        "Projections W_Q, W_K, W_V, W_O",
        "Off: plain dot-product attention, Q = K = V = x (cross-attention: K = V = the encoder output), and no W_O",
        "projections",
        study.read_projections,
        study.write_projections,
    ),
    Row(
        OUTPUT,
        "Temperature",
        ("temperature", "temperature_slider"),
        _build_temperature,
        _connect_temperature,
        _read_temperature,
        frozenset({"temperature"}),
    ),
    Row(
        OUTPUT,
        "Device",
        ("device",),
        _build_device,
        _activated("device", lambda p, s: s.update_options(device=p.device.currentData())),
        _read_device,
        frozenset({"device"}),
    ),
    Row(
        OUTPUT,
        "Score colours",
        ("colour_scale",),
        _build_colour_scale,
        lambda p, s: p.colour_scale.activated.connect(lambda _i: s.set_view(colour_scale=p.colour_scale.currentData())),
        _read_colour_scale,
        frozenset({"view.colour_scale"}),
    ),
    Row(
        OUTPUT,
        "Colours",
        ("colormap",),
        _build_colormap,
        lambda p, s: p.colormap.currentTextChanged.connect(lambda name: s.set_view(colormap=name)),
        _read_colormap,
        frozenset({"view.colormap"}),
    ),
    Row(
        OUTPUT,
        "Compare",
        ("compare", "pin"),
        study.build_compare,
        study.connect_compare,
        study.read_compare,
        frozenset({"view.compare", "pinned"}),
    ),
)


class ControlsPanel(QWidget):
    """Every what-if toggle of RunOptions plus the view choices (head, colour map), built from ROWS.

    Widgets write to the session; the session's signals re-read only the rows whose fields changed, with those
    widgets' signals blocked, so showing a state never triggers another change."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("controls")
        self.session = session
        self._view: ViewState | None = None  # the view last shown, to tell which of its fields changed
        layout = QVBoxLayout(self)
        forms: dict[str, QFormLayout] = {}
        for row in ROWS:
            if row.group not in forms:
                group = QGroupBox(row.group)
                forms[row.group] = QFormLayout(group)
                layout.addWidget(group)
            item = row.build(self)
            if row.label is None:
                forms[row.group].addRow(item)
            else:
                forms[row.group].addRow(row.label, item)
            row.connect(self, session)
        self.reset = QPushButton("Reset all toggles", objectName="resetOptionsButton")
        self.reset.clicked.connect(session.reset_options)
        layout.addWidget(self.reset)
        layout.addStretch(1)
        session.modelChanged.connect(lambda _m: self.sync(ALL_FIELDS))
        session.optionsChanged.connect(lambda _o, changed: self.sync(changed))
        session.viewChanged.connect(self._on_view)
        session.stageChanged.connect(lambda _key: self.sync(frozenset({"stage"})))
        session.pinnedChanged.connect(lambda _trace: self.sync(frozenset({"pinned"})))
        self.sync(ALL_FIELDS)

    def _on_view(self, view: ViewState) -> None:
        old = self._view
        self.sync(
            frozenset(
                f"view.{f.name}" for f in fields(view) if old is None or getattr(old, f.name) != getattr(view, f.name)
            )
        )

    def sync(self, changed: frozenset[str] | None = ALL_FIELDS) -> None:
        """Show the session's state in the rows that show one of the `changed` fields (None: every row).
        Emits nothing."""
        s = self.session
        self.setEnabled(s.model is not None)
        self._view = s.view
        if s.model is None:
            return
        for row in ROWS:
            if changed is None or row.fields & changed:
                blockers = [QSignalBlocker(getattr(self, name)) for name in row.widgets]
                try:
                    row.read(self, s, s.model.config)
                finally:
                    del blockers
