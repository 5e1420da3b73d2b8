"""The toggles-table rows for studying a model that depend on more than the options: head ablation at the
current site, and comparing with a pinned run A (plain dot-product attention is a row of the option table).

They are rows of control_rows.rows() (built, wired and re-read the same way); "stage" and "pinned" in their
fields mean: re-read when the session's stage or its pinned run changes (ControlsPanel connects those).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLayout, QPushButton

from attnlab.present import words
from attnlab.present.stages import COMPARE_MODES
from attnlab.present.window_facts import ABLATE_CHOICES, ablated_heads, ablation_of
from attnlab.session import Session

if TYPE_CHECKING:
    from attnlab.present.engine_api import ModelConfig
    from attnlab.ui.controls.control_host import ControlHost


# ablation -----------------------------------------------------------------------------------------------------
def build_ablate(p: ControlHost) -> QComboBox:
    p.ablate = QComboBox()
    p.ablate.setObjectName("ablateCombo")
    p.ablate.setToolTip(
        "Ablate the shown head at the current attention site: its context is replaced "
        "by zeros or by its mean over the positions before W_O"
    )
    for mode, text in ABLATE_CHOICES:
        p.ablate.addItem(text, mode)
    return p.ablate


def connect_ablate(p: ControlHost, s: Session) -> None:
    def write(_index: int) -> None:
        stage = s.stage
        if stage is not None and stage.site:
            s.set_ablation(stage.site, s.view.head, p.ablate.currentData())

    p.ablate.activated.connect(write)


def read_ablate(p: ControlHost, s: Session, _config: ModelConfig) -> None:
    """Enabled on every stage of an attention site (Q/K/V to × W_O: ablation acts on the site's context,
    whichever of its stages is shown); shows how the shown head of this site is ablated, and how many heads
    are. Heads and layers are counted from 1, as everywhere in the window."""
    stage = s.stage
    site = stage.site if stage is not None else None
    p.ablate.setEnabled(bool(site))
    mode = ablation_of(s.options, site, s.view.head) if site else None
    p.ablate.setCurrentIndex(max(0, p.ablate.findData(mode)))
    count = ablated_heads(s.options)
    where = f"{words.head_words(s.view.head)} of {words.site_full_words(site)}" if site else "pick an attention stage"
    p.ablate.setToolTip(f"Ablate {where}. Heads ablated in this run: {count}.")


# compare --------------------------------------------------------------------------------------------------------
def build_compare(p: ControlHost) -> QLayout:
    p.compare = QComboBox()
    p.compare.setObjectName("compareCombo")
    p.compare.setToolTip("With a pinned run A: show A | B side by side, or A | B | B − A")
    for value, text in COMPARE_MODES:
        p.compare.addItem(text, value)
    p.pin = QPushButton("Pin as A")
    p.pin.setObjectName("pinButton")
    p.pin.setToolTip("Keep the current run as A; change anything, and compare (Ctrl+P)")
    row = QHBoxLayout()
    row.addWidget(p.compare, 1)
    row.addWidget(p.pin)
    return row


def connect_compare(p: ControlHost, s: Session) -> None:
    p.compare.activated.connect(lambda _i: s.set_view(compare=p.compare.currentData()))
    p.pin.clicked.connect(lambda: s.unpin() if s.pinned is not None else s.pin())


def read_compare(p: ControlHost, s: Session, _config: ModelConfig) -> None:
    pinned = s.pinned is not None
    p.compare.setEnabled(pinned)
    p.compare.setCurrentIndex(max(0, p.compare.findData(s.view.compare if pinned else "off")))
    p.pin.setText("Unpin A" if pinned else "Pin as A")
