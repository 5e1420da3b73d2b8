"""Stage → Conversation…: the conversation editor for a model with a chat template. A system prompt, rows of
role + text (add / remove a turn), add-generation-prompt; OK runs the model on the conversation rendered by its
template (Session.set_chat; engine/chat_prompt.py renders it on the worker), "Plain text" goes back to the source
box. Enabled only when the open model ships a template (present/model_info.InputWords.chat)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from attnlab.session import Session

ROLES = ("user", "assistant")
FIRST_TURN = [{"role": "user", "content": "What is the capital of France?"}]


class ChatDialog(QDialog):
    """The conversation editor; `messages()` is what OK hands the session."""

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setWindowTitle("Conversation")
        self.setObjectName("chatDialog")
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText("System prompt (optional)")
        self.system.setFixedHeight(60)
        self.turns = QTableWidget(0, 2)
        self.turns.setHorizontalHeaderLabels(["Role", "Text"])
        self.turns.horizontalHeader().setStretchLastSection(True)
        self.generation = QCheckBox("Add the generation prompt (the assistant's turn begins)")
        add, remove = QPushButton("Add turn"), QPushButton("Remove turn")
        for widget, name in (
            (self.system, "chatSystem"),
            (self.turns, "chatTurns"),
            (self.generation, "chatGenPrompt"),
            (add, "chatAdd"),
            (remove, "chatRemove"),
        ):
            widget.setObjectName(name)
        add.clicked.connect(lambda: self.add_turn("user" if self._last_role() == "assistant" else "assistant", ""))
        remove.clicked.connect(self.remove_turn)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        plain = buttons.addButton("Plain text", QDialogButtonBox.ButtonRole.ResetRole)
        plain.setObjectName("chatPlain")
        plain.clicked.connect(self.plain_text)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(add)
        row.addWidget(remove)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(
            QLabel("Rendered by the model's own chat template, as transformers' apply_chat_template does.")
        )
        layout.addWidget(self.system)
        layout.addWidget(self.turns, 1)
        layout.addLayout(row)
        layout.addWidget(self.generation)
        layout.addWidget(buttons)
        self.resize(640, 420)
        self._fill()

    def _fill(self) -> None:
        chat = self.session.chat_messages()
        messages = chat[0] if chat is not None else list(FIRST_TURN)
        if messages and messages[0]["role"] == "system":
            self.system.setPlainText(messages[0]["content"])
            messages = messages[1:]
        for m in messages:
            self.add_turn(m["role"], m["content"])
        self.generation.setChecked(chat[1] if chat is not None else True)

    def _last_role(self) -> str:
        n = self.turns.rowCount()
        combo = self.turns.cellWidget(n - 1, 0) if n else None
        return combo.currentText() if isinstance(combo, QComboBox) else "assistant"

    def add_turn(self, role: str, text: str) -> None:
        row = self.turns.rowCount()
        self.turns.insertRow(row)
        combo = QComboBox()
        combo.addItems(list(dict.fromkeys([*ROLES, role])))
        combo.setCurrentText(role)
        self.turns.setCellWidget(row, 0, combo)
        edit = QPlainTextEdit(text)
        self.turns.setCellWidget(row, 1, edit)
        self.turns.setRowHeight(row, 56)

    def remove_turn(self) -> None:
        row = self.turns.currentRow() if self.turns.currentRow() >= 0 else self.turns.rowCount() - 1
        if row >= 0:
            self.turns.removeRow(row)

    def messages(self) -> list[dict]:
        """The conversation as {"role", "content"} dicts: the system prompt first when there is one."""
        out = [{"role": "system", "content": self.system.toPlainText()}] if self.system.toPlainText().strip() else []
        for row in range(self.turns.rowCount()):
            combo, edit = self.turns.cellWidget(row, 0), self.turns.cellWidget(row, 1)
            if isinstance(combo, QComboBox) and isinstance(edit, QPlainTextEdit):
                out.append({"role": combo.currentText(), "content": edit.toPlainText()})
        return out

    def accept(self) -> None:
        messages = self.messages()
        if messages:
            self.session.set_chat(messages, self.generation.isChecked())
        super().accept()

    def plain_text(self) -> None:
        self.session.set_chat(None)
        super().reject()


def open_chat_dialog(session: Session, parent: QWidget | None = None) -> ChatDialog:
    """Show the editor (non-modal, so the panels stay live); the caller keeps the returned dialog."""
    dialog = ChatDialog(session, parent)
    dialog.show()
    return dialog
