"""What each control of the toggles panel shows for a model and its options, as plain data (Qt-free).

The controls are those of the option table (engine/option_specs.py); ui/controls/control_rows.py turns each into a
widget row and draws a ControlState into it. Nothing here knows a widget.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from attnlab.engine import option_rules
from attnlab.engine.config import ModelConfig
from attnlab.engine.option_spec import Choice, Control, OptionSpec
from attnlab.engine.options import RunOptions

__all__ = ["Choice", "Control", "ControlState", "OptionSpec", "control_state", "option_controls", "written"]


@dataclass(frozen=True)
class ControlState:
    """One control for one model and options: enabled or not (the tooltip then says why), its tooltip, its
    text (a check box's or button's; '' keeps the built one), a combo's choices, a spin's range and the value
    shown (a "clear" control: the line of text beside its button)."""

    enabled: bool
    tooltip: str
    text: str
    choices: tuple[Choice, ...]
    value_range: tuple[float, float] | None
    value: Any


def option_controls() -> Iterator[tuple[OptionSpec, Control]]:
    """Every control of the option table with its spec, in the table's order."""
    return option_rules.controls()


def control_state(spec: OptionSpec, control: Control, config: ModelConfig, options: RunOptions) -> ControlState:
    reason = control.unavailable(config, options) if control.unavailable else None
    tooltip = reason or (control.tooltip_for(config) if control.tooltip_for else control.tooltip)
    return ControlState(
        enabled=reason is None,
        tooltip=tooltip,
        text=control.text_for(config) if control.text_for else control.text,
        choices=control.choices(config) if control.choices else (),
        value_range=control.value_range(config) if control.value_range else None,
        value=spec.shown(control, options, config),
    )


def written(spec: OptionSpec, control: Control, options: RunOptions, config: ModelConfig, value: Any) -> RunOptions:
    """The options a person's new `value` in `control` makes."""
    return spec.written(control, options, config, value)
