"""What the toggles table's rows see of the panel they live in: the widgets of the view and study rows,
declared once. The row functions (control_widgets.py, controls_study.py, the row table in control_rows.py)
build, wire and read a `ControlHost`; panel.py's ControlsPanel is one. Declaring them here, below the rows,
keeps the rows from importing the panel that imports them (no import circle in ui/controls)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QComboBox, QLayout, QPushButton, QSpinBox, QWidget

if TYPE_CHECKING:
    from attnlab.present.engine_api import ModelConfig
    from attnlab.session import Session


class ControlHost(QWidget):
    """The toggles panel as its rows see it. The option table's widgets are attributes named by their
    controls (Control.attr, set by the builders); the view and study rows' widgets are declared here."""

    head: QSpinBox  # the head shown, counted from 1
    colour_scale: QComboBox
    colormap: QComboBox
    ablate: QComboBox
    compare: QComboBox
    pin: QPushButton


# a row's parts (control_rows.Row): how its widget is built, read back from the session, and wired to it
Builder = Callable[[ControlHost], QWidget | QLayout]
Reader = Callable[[ControlHost, "Session", "ModelConfig"], None]
Connector = Callable[[ControlHost, "Session"], object]  # what it returns (a signal's Connection) is dropped
