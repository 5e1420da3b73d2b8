"""The rows of the toggles panel: one per control of the option table (engine/option_specs.py), plus the
view choices and the study rows that depend on the stage shown, bound two-way to the session.

`rows()` makes the table from the option table as it stands: each row says how its widget is built, wired,
read back and which fields re-read it (ControlsPanel in controls.py lays the rows out and re-reads them). The
option rows are generated (control_widgets: one builder per widget kind); the view and study rows are
written here (control_widgets, controls_study), each placed after the row it follows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attnlab.present.option_controls import Control, OptionSpec, option_controls
from attnlab.ui.controls import control_widgets as widget
from attnlab.ui.controls import controls_study as study

if TYPE_CHECKING:
    from attnlab.ui.controls.control_host import Builder, Connector, Reader

# Each row binds one control to the session, both ways. `widgets` are the panel attributes it owns (their
# signals are blocked while it is re-read); `build` (a Builder, control_host.py) makes the widget placed in the
# group (it may hold several of them); `connect` wires the widgets' "a person changed me" signals to the
# session; `read` shows the session's state (called with signals blocked); `fields` are the RunOptions fields
# (or "view.<field>") whose change makes the row re-read.


@dataclass(frozen=True)
class Row:
    group: str
    label: str | None  # the form label; None: the widget spans the row (it carries its own text)
    widgets: tuple[str, ...]
    build: Builder
    connect: Connector
    read: Reader
    fields: frozenset[str]


def _option_row(spec: OptionSpec, control: Control) -> Row:
    """The row of one control of the option table."""
    widgets = (control.attr, widget.slider_attr(control)) if control.kind == "slider" else (control.attr,)
    return Row(
        control.group,
        control.label,
        widgets,
        widget.build_control(control),
        widget.connect_control(spec, control),
        widget.read_control(spec, control),
        frozenset({spec.field, *control.reads}),
    )


FOLLOWED = ""  # a placed row's group: the group of the row it follows
# (the row it follows, the row): view choices and the study rows that read the stage or the pinned run
PLACED_ROWS: tuple[tuple[str, Row], ...] = (
    (
        "heads",
        Row(
            FOLLOWED,
            "Show",
            ("head",),
            widget.build_head,
            lambda p, s: p.head.valueChanged.connect(lambda v: s.set_view(head=v - 1)),
            widget.read_head,
            frozenset({"n_heads", "view.head"}),
        ),
    ),
    (
        "final_norm",
        Row(
            FOLLOWED,
            "Ablate head",
            ("ablate",),
            study.build_ablate,
            study.connect_ablate,
            study.read_ablate,
            frozenset({"ablate", "view.head", "stage"}),
        ),
    ),
    (
        "device",
        Row(
            FOLLOWED,
            "Score colours",
            ("colour_scale",),
            widget.build_colour_scale,
            lambda p, s: p.colour_scale.activated.connect(
                lambda _i: s.set_view(colour_scale=p.colour_scale.currentData())
            ),
            widget.read_colour_scale,
            frozenset({"view.colour_scale"}),
        ),
    ),
    (
        "colour_scale",
        Row(
            FOLLOWED,
            "Colours",
            ("colormap",),
            widget.build_colormap,
            lambda p, s: p.colormap.currentTextChanged.connect(lambda name: s.set_view(colormap=name)),
            widget.read_colormap,
            frozenset({"view.colormap"}),
        ),
    ),
    (
        "colormap",
        Row(
            FOLLOWED,
            "Compare",
            ("compare", "pin"),
            study.build_compare,
            study.connect_compare,
            study.read_compare,
            frozenset({"view.compare", "pinned"}),
        ),
    ),
)


def rows() -> tuple[Row, ...]:
    """Every row of the panel: the option table's controls in its order, each placed row after the one it
    follows and in its group (at the end when that one is gone)."""
    table = [_option_row(spec, control) for spec, control in option_controls()]
    for after, row in PLACED_ROWS:
        at = next((i for i, r in enumerate(table) if r.widgets[0] == after), len(table) - 1)
        table.insert(at + 1, replace(row, group=table[at].group))
    return tuple(table)
