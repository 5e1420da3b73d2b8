"""The type-to-search stage picker (Ctrl+K or /): a filter box over the stage titles, groups and keys of the
current run; Enter jumps to the highlighted stage, Esc closes. The matching itself is present.stages.search_stages."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from attnlab.present.stage_jumps import search_stages
from attnlab.present.stages import Stage

KEY_ROLE = Qt.ItemDataRole.UserRole


class StageSearch(QDialog):
    stageChosen = Signal(str)

    def __init__(self, stages: list[Stage], current: str | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("stageSearch")
        self.setWindowTitle("Go to stage")
        self._stages = stages
        self._current = current
        self.edit = QLineEdit(placeholderText="Type to filter: e.g. decoder 2 softmax")
        self.edit.setObjectName("stageSearchEdit")
        self.list = QListWidget()
        self.list.setObjectName("stageSearchList")
        box = QVBoxLayout(self)
        box.addWidget(self.edit)
        box.addWidget(self.list, 1)
        self.edit.textChanged.connect(self._fill)
        self.edit.returnPressed.connect(self._choose)
        self.list.itemActivated.connect(lambda _item: self._choose())
        self._fill("")
        if parent is not None:
            self.resize(min(720, int(parent.width() * 0.8)), min(520, int(parent.height() * 0.7)))

    def _fill(self, text: str) -> None:
        self.list.clear()
        for number, stage in enumerate(self._stages, 1):
            if stage not in self._matches(text):
                continue
            item = QListWidgetItem(f"{number}. {stage.group} · {stage.title}   ({stage.key})")
            item.setData(KEY_ROLE, stage.key)
            self.list.addItem(item)
            if not text and stage.key == self._current:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.list.count():
            self.list.setCurrentRow(0)

    def _matches(self, text: str) -> list[Stage]:
        if getattr(self, "_match_text", None) != text:
            self._match_text, self._match_list = text, search_stages(self._stages, text)
        return self._match_list

    def visible_keys(self) -> list[str]:
        return [self.list.item(i).data(KEY_ROLE) for i in range(self.list.count())]

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Up / Down move through the list while the cursor stays in the filter box."""
        if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
            self.list.keyPressEvent(event)
            return
        super().keyPressEvent(event)

    def _choose(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.stageChosen.emit(item.data(KEY_ROLE))
            self.accept()
