"""Right-click a head to ablate it: "Zero this head" / "Replace by its mean" / "Clear ablation".

Offered on the all-heads grid (the head under the mouse) and on the single-head attention panels (the head they
show). The choice goes through the Session's RunOptions, the same path as the "Ablate head" control
(`Session.set_ablation`); the shown head becomes the chosen one first, so that control then shows the choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from attnlab.present import words
from attnlab.present.window_facts import ablation_of

if TYPE_CHECKING:
    from attnlab.session import Session
    from attnlab.ui.stages.base import StagePanel

MENU_CHOICES = (("zero", "Zero this head"), ("mean", "Replace by its mean"), (None, "Clear ablation"))
# stages that show one head of a site: right-click anywhere on the panel offers the menu for that head
SINGLE_HEAD_KINDS = frozenset(
    {"qkv", "qk_norm", "scores", "scaled", "bias", "biased", "capped", "masked", "weights", "context", "lines"}
)


def head_menu(parent: QWidget, site: str, head: int, current: str | None) -> QMenu:
    """The menu for trace head `head` of `site`; `current`: how it is ablated now ("zero", "mean" or None).
    Each action's data is its mode (None clears); the current mode is checked, "Clear" greyed when none."""
    menu = QMenu(parent)
    menu.setObjectName("headAblationMenu")
    menu.addSection(f"{words.head_words(head)} of {words.site_full_words(site)}")
    for mode, text in MENU_CHOICES:
        action = menu.addAction(text)
        action.setData(mode)
        action.setObjectName(f"ablate-{mode or 'clear'}")
        if mode is None:
            action.setEnabled(current is not None)
        else:
            action.setCheckable(True)
            action.setChecked(mode == current)
    return menu


def offer(session: Session, panel: QWidget, head: int, global_pos: QPoint) -> QMenu | None:
    """Pop the menu up for `head` of the current stage's site (nothing off an attention site); returns it."""
    stage = session.stage
    site = stage.site if stage is not None else None
    if not site or session.trace is None:
        return None
    old = panel.findChild(QMenu, "headAblationMenu")
    if old is not None:
        old.deleteLater()
        old.setObjectName("")
    menu = head_menu(panel, site, head, ablation_of(session.options, site, head))

    def chosen(action: QAction) -> None:
        session.set_view(head=head)
        session.set_ablation(site, head, action.data())

    menu.triggered.connect(chosen)
    menu.popup(global_pos)
    return menu


def attach(panel: StagePanel, session: Session) -> None:
    """Wire a stage panel: the grid's per-head requests, and a panel-wide menu on single-head panels."""
    panel.headMenuRequested.connect(lambda head, pos: offer(session, panel, head, pos))
    if SINGLE_HEAD_KINDS & set(panel.kinds):
        panel.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        panel.customContextMenuRequested.connect(
            lambda pos: offer(session, panel, session.view.head, panel.mapToGlobal(pos))
        )
