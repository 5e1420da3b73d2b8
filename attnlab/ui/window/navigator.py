"""The pipeline navigator: every stage of the current trace, grouped ("Source input", "Encoder layer 1", …).

→ / PageDown step forward, ← / PageUp back, Home / End jump to the ends (PageUp/PageDown are what
presentation clickers send). Only the group of the current stage is expanded, so the list stays short.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QAbstractItemView, QTreeWidget, QTreeWidgetItem, QWidget

from attnlab.present import words

if TYPE_CHECKING:
    from attnlab.present.stages import Stage

KEY_ROLE = Qt.ItemDataRole.UserRole
STEP_KEYS: dict[int, int] = {  # Qt.Key -> stages to step
    Qt.Key.Key_Right: 1,
    Qt.Key.Key_PageDown: 1,
    Qt.Key.Key_Left: -1,
    Qt.Key.Key_PageUp: -1,
    Qt.Key.Key_Home: -(10**9),
    Qt.Key.Key_End: 10**9,
}


def short_title(title: str) -> str:
    """Rows sit in a narrow dock: 'masked self-attention · mask' -> 'masked self-attn · mask'."""
    return words.short_words(title)


def first_key(group: QTreeWidgetItem) -> str | None:
    """The stage key of a group row's first stage."""
    first = group.child(0)
    return first.data(0, KEY_ROLE) if first is not None else None


class StageNavigator(QTreeWidget):
    stageActivated = Signal(str)  # the person picked a stage (click or keyboard selection)
    stepRequested = Signal(int)  # ±1 to step, ±10**9 to jump to an end

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("stageTree")
        self.setHeaderHidden(True)
        self.setColumnCount(1)
        self.setUniformRowHeights(True)
        self.setIndentation(14)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setAccessibleName("Pipeline stages")
        self._items: dict[str, QTreeWidgetItem] = {}
        self._groups: dict[str, QTreeWidgetItem] = {}
        self._signature: tuple[tuple[str, str, str], ...] = ()
        self._stages: list[Stage] | None = None  # the list last shown (stages_for returns the same one again)
        self.currentItemChanged.connect(self._on_current_changed)

    # ---- content ---------------------------------------------------------------------------------------
    def set_stages(self, stages: list[Stage], current: str | None) -> None:
        """Show these stages (rebuilt only when the keys or groups changed; titles are renamed in place)
        and select `current`."""
        if stages is self._stages:  # the usual case after a toggle: stages_for gave the same list back
            self.select(current)
            return
        self._stages = stages
        signature = tuple((s.key, s.title, s.group) for s in stages)
        if signature == self._signature:  # an equal list (another trace of the same shape)
            self.select(current)
            return
        same_rows = [(k, g) for k, _t, g in signature] == [(k, g) for k, _t, g in self._signature]
        old, self._signature = self._signature, signature
        if same_rows:
            for number, (stage, (_k, old_title, _g)) in enumerate(zip(stages, old, strict=True), 1):
                if stage.title == old_title:  # most titles stay the same: no text work for them
                    continue
                item = self._items[stage.key]
                text = f"{number:>2}. {short_title(stage.title)}"
                if item.text(0) != text:
                    item.setText(0, text)
                    item.setToolTip(0, f"{stage.title}\n{stage.key}")
        else:
            self.blockSignals(True)
            self.clear()
            self._items.clear()
            self._groups.clear()
            for number, stage in enumerate(stages, 1):
                group = self._groups.get(stage.group)
                if group is None:
                    group = QTreeWidgetItem(self, [stage.group])
                    group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                    font = group.font(0)
                    font.setBold(True)
                    group.setFont(0, font)
                    self._groups[stage.group] = group
                item = QTreeWidgetItem(group, [f"{number:>2}. {short_title(stage.title)}"])
                item.setData(0, KEY_ROLE, stage.key)
                item.setToolTip(0, f"{stage.title}\n{stage.key}")
                self._items[stage.key] = item
            self.blockSignals(False)
        self.select(current)

    def select(self, key: str | None) -> None:
        """Make `key` the current row without emitting stageActivated."""
        item = self._items.get(key or "")
        if item is None:
            return
        if item is self.currentItem() and all(g.isExpanded() == (g is item.parent()) for g in self._groups.values()):
            return  # already shown so (a toggle re-selects the same stage twice per trace)
        self.blockSignals(True)
        for group in self._groups.values():
            group.setExpanded(group is item.parent())
        self.setCurrentItem(item)
        self.blockSignals(False)
        self.scrollToItem(item, QAbstractItemView.ScrollHint.EnsureVisible)

    def stages(self) -> list[Stage] | None:
        """The stage list last given to set_stages."""
        return self._stages

    def current_key(self) -> str | None:
        item = self.currentItem()
        return item.data(0, KEY_ROLE) if item is not None else None

    def keys(self) -> list[str]:
        return list(self._items)

    # ---- interaction -----------------------------------------------------------------------------------
    def _on_current_changed(self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None) -> None:
        if current is None:
            return
        key = current.data(0, KEY_ROLE)
        if key is None and current.childCount():  # a group row: go to its first stage
            key = first_key(current)
        if key:
            self.stageActivated.emit(key)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        item = self.itemAt(event.position().toPoint())
        if item is not None and item.data(0, KEY_ROLE) is None and item.childCount():
            self.stageActivated.emit(first_key(item))
            event.accept()
            return
        super().mousePressEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        step = STEP_KEYS.get(event.key())
        if step is not None and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            self.stepRequested.emit(step)
            event.accept()
            return
        if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up):
            self.stepRequested.emit(1 if event.key() == Qt.Key.Key_Down else -1)
            event.accept()
            return
        super().keyPressEvent(event)
