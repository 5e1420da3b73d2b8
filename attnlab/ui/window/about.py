"""Help → About: the attnlab version, the versions of the libraries it runs on, and the compute device.

What a teacher reads out when a lab machine misbehaves, so every line is selectable text.
"""

from __future__ import annotations

import html
import platform
from typing import TYPE_CHECKING

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

import attnlab
from attnlab.present.model_info import compute_device, device_description

if TYPE_CHECKING:  # torch is imported on first use: the main window paints before torch has loaded
    import torch

    from attnlab.session import Session
    from attnlab.ui.window.window_host import WindowHost


def version_facts(device: torch.device) -> list[tuple[str, str]]:
    """(label, value) rows shown in the About box, in order."""
    import pyqtgraph  # imported here: the window paints before pyqtgraph is needed
    import torch

    return [
        ("attnlab", attnlab.__version__),
        ("Python", platform.python_version()),
        ("PyTorch", torch.__version__),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
        ("pyqtgraph", pyqtgraph.__version__),
        ("Compute device", device_description(device)),
    ]


def session_device(session: Session) -> torch.device:
    """The device the open model runs on, or the one the run options would pick when none is open yet."""
    return compute_device(session.model, session.options)


class AboutDialog(QDialog):
    def __init__(self, facts: list[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About attnlab")
        rows = "".join(
            f"<tr><td><b>{html.escape(label)}</b>&nbsp;&nbsp;</td><td>{html.escape(value)}</td></tr>"
            for label, value in facts
        )
        self.label = QLabel(
            "<h3>attnlab</h3><p>Step through every computation of a live Transformer, on real weights.</p>"
            f"<table>{rows}</table>",
            self,
        )
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(buttons)


def show_about(window: WindowHost) -> AboutDialog:
    """Open the About box over `window` (a MainWindow) without blocking its event loop."""
    dialog = AboutDialog(version_facts(session_device(window.session)), window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog
