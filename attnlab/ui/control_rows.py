"""The rows of the toggles panel: one per RunOptions field (and per view choice), bound two-way to the session.

ROWS is the table: each row says how its widget is built, wired, read back and which fields re-read it
(ControlsPanel in controls.py lays the rows out and re-reads them). The functions each row is made of live in
control_widgets (the re-wiring toggles) and controls_study (the study toggles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QCheckBox, QLayout, QWidget

from attnlab.present.engine_api import ModelConfig
from attnlab.session import Session
from attnlab.ui import control_widgets as widget
from attnlab.ui import controls_study as study

if TYPE_CHECKING:
    from attnlab.ui.controls import ControlsPanel

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


def _option_checkbox(
    group: str, attr: str, name: str, text: str, tip: str, field: str = "", read: Reader | None = None
) -> Row:
    """A checkbox for one boolean RunOptions `field` (default: `attr`) that a click sets and that shows its value
    (or what `read` shows)."""
    field = field or attr

    def read_option(p: ControlsPanel, s: Session, config: ModelConfig) -> None:
        getattr(p, attr).setChecked(getattr(s.options, field))

    return _checkbox_row(
        group, attr, name, text, tip, field, read or read_option, lambda s, on: s.update_options(**{field: on})
    )


def _activated(attr: str, write: Callable[[ControlsPanel, Session], object]) -> Connector:
    return lambda p, s: getattr(p, attr).activated.connect(lambda _i: write(p, s))


SHAPE, MASKS, PARTS, OUTPUT = "Shape of the computation", "Masks", "Switch parts off", "Output and display"
ROWS: tuple[Row, ...] = (
    Row(
        SHAPE,
        "LayerNorm",
        ("norm",),
        widget.build_norm,
        _activated("norm", lambda p, s: s.update_options(norm=p.norm.currentData())),
        widget.read_norm,
        frozenset({"norm"}),
    ),
    Row(
        SHAPE,
        "Heads",
        ("heads",),
        widget.build_heads,
        _activated("heads", widget.write_heads),
        widget.read_heads,
        frozenset({"n_heads"}),
    ),
    Row(
        SHAPE,
        "Show",
        ("head",),
        widget.build_head,
        lambda p, s: p.head.valueChanged.connect(lambda v: s.set_view(head=v - 1)),
        widget.read_head,
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
        widget.read_final_norm,
        widget.write_final_norm,
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
        widget.CAUSAL_TIPS["dec"],
        "causal",
        widget.read_causal("dec"),
        lambda s, on: s.set_options(s.options.with_causal("dec.self", on)),
    ),
    _checkbox_row(
        MASKS,
        "enc_causal",
        "encCausalCheck",
        "Causal mask (encoder)",
        widget.CAUSAL_TIPS["enc"],
        "causal",
        widget.read_causal("enc"),
        lambda s, on: s.set_options(s.options.with_causal("enc.self", on)),
    ),
    _option_checkbox(
        MASKS, "padding", "paddingCheck", "Padding mask", "Block attention to <pad> tokens", "padding_mask"
    ),
    Row(
        MASKS,
        "Pad to",
        ("pad_to",),
        widget.build_pad_to,
        lambda p, s: p.pad_to.valueChanged.connect(lambda v: s.update_options(pad_to=v)),
        widget.read_pad_to,
        frozenset({"pad_to"}),
    ),
    Row(
        MASKS,
        None,
        ("clear_mask",),
        widget.build_custom_mask,
        lambda p, s: p.clear_mask.clicked.connect(s.clear_custom_masks),
        widget.read_custom_mask,
        frozenset({"custom_masks"}),
    ),
    _option_checkbox(PARTS, "scale", "scaleCheck", "Divide scores by √dₖ", "Scale QKᵀ by 1/√dₖ before the softmax"),
    _option_checkbox(
        PARTS,
        "positional",
        "positionalCheck",
        "Positional encoding",
        "Add the position to each token",
        read=widget.read_positional,
    ),
    _option_checkbox(PARTS, "residual", "residualCheck", "Residual connections", "The x + sublayer(x) skip paths"),
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
        widget.build_temperature,
        widget.connect_temperature,
        widget.read_temperature,
        frozenset({"temperature"}),
    ),
    Row(
        OUTPUT,
        "Device",
        ("device",),
        widget.build_device,
        _activated("device", lambda p, s: s.update_options(device=p.device.currentData())),
        widget.read_device,
        frozenset({"device"}),
    ),
    Row(
        OUTPUT,
        "Score colours",
        ("colour_scale",),
        widget.build_colour_scale,
        lambda p, s: p.colour_scale.activated.connect(lambda _i: s.set_view(colour_scale=p.colour_scale.currentData())),
        widget.read_colour_scale,
        frozenset({"view.colour_scale"}),
    ),
    Row(
        OUTPUT,
        "Colours",
        ("colormap",),
        widget.build_colormap,
        lambda p, s: p.colormap.currentTextChanged.connect(lambda name: s.set_view(colormap=name)),
        widget.read_colormap,
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
