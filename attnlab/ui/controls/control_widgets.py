"""How each control of the toggles panel is built, drawn and wired: the option table's controls by the kind of
their widget (check, combo, spin, slider, clear), and the view choices (head shown, colour scale, colour map).

A `build_*` makes the widget(s) and keeps them as attributes of the panel; a `read_*` shows the session's state
in them (the panel blocks their signals meanwhile); a `connect_*` sends a person's change to the session.
What an option control shows for a model (values, range, why it is off) comes from present/option_controls.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
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

from attnlab.present.option_controls import Control, ControlState, OptionSpec, control_state, written
from attnlab.present.stages import COLOUR_SCALES
from attnlab.present.window_facts import head_count
from attnlab.session import Session

if TYPE_CHECKING:
    from attnlab.present.engine_api import ModelConfig
    from attnlab.ui.controls.control_host import Builder, Connector, ControlHost, Reader

Widget = TypeVar("Widget", bound=QWidget)


def row_layout(*widgets: QWidget, stretch_first: bool = True) -> QHBoxLayout:
    row = QHBoxLayout()
    for i, w in enumerate(widgets):
        row.addWidget(w, 1 if stretch_first and i == 0 else 0)
    return row


# option controls, by widget kind ---------------------------------------------------------------------------
def slider_attr(control: Control) -> str:
    return f"{control.attr}_slider"


def info_attr(control: Control) -> str:
    return str(control.settings.get("info", f"{control.attr}_info"))


def _named(widget: Widget, c: Control) -> Widget:
    """`widget` with the control's object name and its tooltip before a model is open."""
    widget.setObjectName(c.name)
    widget.setToolTip(c.tooltip)
    return widget


def _slider_pair(p: ControlHost, c: Control) -> QLayout:
    """A QDoubleSpinBox (c.name) and a QSlider beside it (settings["slider"]) moving it in 1/scale steps."""
    spin_settings = {k: v for k, v in c.settings.items() if k not in ("scale", "slider")}
    spin = _named(QDoubleSpinBox(**spin_settings), c)
    scale = c.settings["scale"]
    slider = QSlider(Qt.Orientation.Horizontal)
    slider.setObjectName(c.settings["slider"])
    slider.setMinimum(round(spin.minimum() * scale))
    slider.setMaximum(round(spin.maximum() * scale))
    slider.setValue(round(spin.value() * scale))
    setattr(p, c.attr, spin)
    setattr(p, slider_attr(c), slider)
    return row_layout(slider, spin)


def _clear_button(p: ControlHost, c: Control) -> QWidget:
    """A line of text (what is set) above a button that puts the option back."""
    setattr(p, info_attr(c), QLabel(wordWrap=True))
    setattr(p, c.attr, _named(QPushButton(c.text), c))
    box = QWidget()
    column = QVBoxLayout(box)
    column.setContentsMargins(0, 0, 0, 0)
    column.addWidget(getattr(p, info_attr(c)))
    column.addWidget(getattr(p, c.attr))
    return box


def build_control(c: Control) -> Builder:
    def build(p: ControlHost) -> QWidget | QLayout:
        if c.kind == "slider":
            return _slider_pair(p, c)
        if c.kind == "clear":
            return _clear_button(p, c)
        if c.kind == "check":
            widget: QWidget = _named(QCheckBox(c.text), c)
        elif c.kind == "combo":
            widget = _named(QComboBox(), c)
        else:
            widget = _named(QSpinBox(**c.settings), c)
        setattr(p, c.attr, widget)
        return widget

    return build


def connect_control(spec: OptionSpec, c: Control) -> Connector:
    def connect(p: ControlHost, s: Session) -> None:
        def write(value: Any) -> None:
            if s.model is not None:
                s.set_options(written(spec, c, s.options, s.model.config, value))

        widget = getattr(p, c.attr)
        if c.kind == "check":
            widget.toggled.connect(write)
        elif c.kind == "combo":
            widget.activated.connect(lambda _i: write(widget.currentData()))
        elif c.kind == "clear":
            widget.clicked.connect(lambda: write(None))
        else:
            widget.valueChanged.connect(write)
        if c.kind == "slider":
            scale = c.settings["scale"]
            getattr(p, slider_attr(c)).valueChanged.connect(lambda v: widget.setValue(v / scale))

    return connect


def _show_choices(box: QComboBox, state: ControlState) -> None:
    """The combo's items as the state lists them: refilled when the values differ, else re-labelled."""
    values = [choice.value for choice in state.choices]
    if [box.itemData(i) for i in range(box.count())] != values:
        box.clear()
        for choice in state.choices:
            box.addItem(choice.text, choice.value)
    for i, choice in enumerate(state.choices):
        box.setItemText(i, choice.text)
        cast(QStandardItemModel, box.model()).item(i).setEnabled(choice.enabled)  # a combo's own model
    box.setCurrentIndex(max(0, box.findData(state.value)))


def read_control(spec: OptionSpec, c: Control) -> Reader:
    def read(p: ControlHost, s: Session, config: ModelConfig) -> None:
        state = control_state(spec, c, config, s.options)
        widget = getattr(p, c.attr)
        widget.setEnabled(state.enabled)
        widget.setToolTip(state.tooltip)
        if c.kind == "check":
            widget.setText(state.text)
            widget.setChecked(bool(state.value))
        elif c.kind == "combo":
            _show_choices(widget, state)
        elif c.kind == "clear":
            getattr(p, info_attr(c)).setText(str(state.value))
        else:
            if state.value_range is not None:
                widget.setRange(*state.value_range)
            widget.setValue(state.value)
        if c.kind == "slider":
            getattr(p, slider_attr(c)).setValue(round(state.value * c.settings["scale"]))

    return read


# view choices ------------------------------------------------------------------------------------------------
def build_head(p: ControlHost) -> QWidget:
    # people count heads from 1 ("head 1 of 4"); ViewState.head and the trace count from 0
    p.head = QSpinBox(prefix="head ", minimum=1, maximum=1)
    p.head.setObjectName("headSpin")
    p.head.setToolTip("The head shown by the single-head panels (or click one in 'all heads')")
    return p.head


def read_head(p: ControlHost, s: Session, config: ModelConfig) -> None:
    n_heads = head_count(s.options, config)
    p.head.setMaximum(n_heads)
    p.head.setSuffix(f" of {n_heads}")
    p.head.setValue(min(s.view.head, n_heads - 1) + 1)


def build_colour_scale(p: ControlHost) -> QWidget:
    p.colour_scale = QComboBox()
    p.colour_scale.setObjectName("colourScaleCombo")
    p.colour_scale.setToolTip(
        "Colour scale of an attention site's QKᵀ, ÷√dₖ and masked maps: shared, so "
        "the division by √dₖ is seen; per panel; or one fixed range"
    )
    for value, text in COLOUR_SCALES:
        p.colour_scale.addItem(text, value)
    return p.colour_scale


def read_colour_scale(p: ControlHost, s: Session, config: ModelConfig) -> None:
    p.colour_scale.setCurrentIndex(max(0, p.colour_scale.findData(s.view.colour_scale)))


def build_colormap(p: ControlHost) -> QWidget:
    p.colormap = QComboBox()
    p.colormap.setObjectName("colormapCombo")
    p.colormap.setToolTip("Colours of every heatmap")
    return p.colormap


def read_colormap(p: ControlHost, s: Session, config: ModelConfig) -> None:
    if not p.colormap.count():  # filled late: the list lives with pyqtgraph, imported on first use
        from attnlab.ui.plots.colormaps import COLORMAPS

        p.colormap.addItems(COLORMAPS)
    p.colormap.setCurrentIndex(max(0, p.colormap.findText(s.view.colormap)))
