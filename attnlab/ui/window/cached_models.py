"""File → Open model…: the models in the Hugging Face cache on this computer (checkpoints/hf_cache_scan.py),
one row each: name, size, revisions, and "opens" or the one-line reason it will not. Double-click or Open
opens the chosen one by id (through the window's open_checkpoint, on the worker). The cache is scanned off the
GUI thread; nothing here touches the network."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from attnlab.checkpoints.hf_cache_scan import CachedModel
    from attnlab.ui.window.window_host import WindowHost

COLUMNS = ("Model", "Size", "Revisions", "Opens in attnlab")


class CachedModelsDialog(QDialog):
    """The cache's models in a table; `on_open(spec)` is called with the id (or id@commit) of the one opened."""

    scanned = Signal(object, object, str)  # models, problems, the cache folder: from the scanning thread

    def __init__(self, on_open: Callable[[str], None], parent: QWidget | None = None, cache: str | None = None):
        super().__init__(parent)
        self.setObjectName("cachedModelsDialog")
        self.setWindowTitle("Open a model from the Hugging Face cache")
        self.on_open = on_open
        self.models: list[CachedModel] = []
        self.intro = QLabel("Reading the Hugging Face cache…", wordWrap=True)
        self.intro.setObjectName("cachedModelsIntro")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("cachedModelsTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        for column in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(lambda row, _column: self.open_row(row))
        self.table.itemSelectionChanged.connect(self._sync_button)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(lambda: self.open_row(self.table.currentRow()))
        self.buttons.rejected.connect(self.reject)
        self.open_button = self.buttons.button(QDialogButtonBox.StandardButton.Open)
        self.open_button.setEnabled(False)
        box = QVBoxLayout(self)
        box.addWidget(self.intro)
        box.addWidget(self.table, 1)
        box.addWidget(self.buttons)
        self.resize(820, 420)
        self.scanned.connect(self.show_models)
        threading.Thread(target=self._scan, args=(cache,), name="attnlab-cache-scan", daemon=True).start()

    def _scan(self, cache: str | None) -> None:
        """On a thread of its own: huggingface_hub's scan and each model's config.json."""
        from attnlab.checkpoints.hf_cache import cache_dir
        from attnlab.checkpoints.hf_cache_scan import cached_models

        root = cache or str(cache_dir())
        try:
            models, problems = cached_models(root)
        except Exception as e:  # never leave the dialog waiting: say what went wrong
            models, problems = [], [f"the cache could not be read ({type(e).__name__}: {e})"]
        self.scanned.emit(models, problems, root)

    def show_models(self, models: list[CachedModel], problems: list[str], root: str) -> None:
        self.models = models
        opening = sum(m.opens for m in models)
        said = (
            f"{len(models)} models in the Hugging Face cache at {root}; {opening} open in attnlab. Double-click "
            "one to open it."
            if models
            else f"No models in the Hugging Face cache at {root}. `attnlab get org/name` downloads one."
        )
        self.intro.setText(said + "".join(f"\n{p}" for p in problems[:3]))
        self.table.setRowCount(len(models))
        muted = self.palette().color(self.palette().ColorRole.PlaceholderText)
        for row, m in enumerate(models):
            texts = (m.repo_id, m.size_text, ", ".join(m.revisions), "opens" if m.opens else m.status)
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setToolTip(text if column < 3 else (m.status or f"opens {m.spec}"))
                if not m.opens:
                    item.setForeground(QColor(muted))
                if column == 1:  # sizes line up on the right
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
        first = next((row for row, m in enumerate(models) if m.opens), None)
        if first is not None:
            self.table.selectRow(first)
        self._sync_button()

    def _sync_button(self) -> None:
        row = self.table.currentRow()
        self.open_button.setEnabled(0 <= row < len(self.models) and self.models[row].opens)

    def open_row(self, row: int) -> None:
        """Open the model of `row` (one that will not open stays: its reason is in the row)."""
        if 0 <= row < len(self.models) and self.models[row].opens:
            self.accept()
            self.on_open(self.models[row].spec)


def show_cached_models(window: WindowHost) -> CachedModelsDialog:
    dialog = CachedModelsDialog(window.open_checkpoint, window)
    dialog.show()
    window._cached_models_dialog = dialog  # kept alive while open
    return dialog
