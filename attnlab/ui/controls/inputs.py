"""The sentence inputs above the stage: source (or prompt), decoder input, Generate and Clear."""

from __future__ import annotations

from PySide6.QtWidgets import QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSizePolicy, QWidget

from attnlab.limits import MAX_SENTENCE_CHARS
from attnlab.present.chat_marks import conversation_label
from attnlab.present.model_info import input_words
from attnlab.session import Session


class InputBar(QWidget):
    """Source sentence (live re-trace as you type), decoder input, "Generate next token" and "Clear"."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.src = QLineEdit(placeholderText="Type a sentence…", clearButtonEnabled=True)
        self.src.setObjectName("srcEdit")
        self.tgt = QLineEdit(
            clearButtonEnabled=True,
            placeholderText="Decoder input (teacher forcing) — empty, or Generate",
        )
        self.tgt.setObjectName("tgtEdit")
        for edit in (self.src, self.tgt):  # the same cap the engine reads (and the settings remember)
            edit.setMaxLength(MAX_SENTENCE_CHARS)
        self.src_label = QLabel("&Source:")
        self.src_label.setBuddy(self.src)
        self.tgt_label = QLabel("&Decoder input:")
        self.tgt_label.setBuddy(self.tgt)
        self.generate = QPushButton("Generate next token")
        self.generate.setObjectName("generateButton")
        self.generate.setToolTip("Append the model's most probable next token (Ctrl+G)")
        self.clear = QPushButton("Clear")
        self.clear.setObjectName("clearTgtButton")
        self.clear.setToolTip("Empty the decoder input")
        for button in (self.generate, self.clear):  # stay button-sized when the decoder box is hidden
            button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        layout = QFormLayout(self)
        layout.setContentsMargins(8, 6, 8, 2)
        layout.addRow(self.src_label, self.src)
        row = QHBoxLayout()
        row.addWidget(self.tgt, 1)
        row.addWidget(self.generate)
        row.addWidget(self.clear)
        row.addStretch(0)
        layout.addRow(self.tgt_label, row)
        self.src.textEdited.connect(session.set_src)
        self.tgt.textEdited.connect(session.set_tgt)
        self.generate.clicked.connect(session.generate_next)
        self.clear.clicked.connect(session.reset_tgt)
        session.textsChanged.connect(self.sync)
        session.modelChanged.connect(lambda _m: self.sync())

    def sync(self) -> None:
        s = self.session
        for edit, text in ((self.src, s.src), (self.tgt, s.tgt)):
            if edit.text() != text:
                edit.setText(text)
        words = input_words(s.model)
        self.src_label.setText(words.src_label)
        self.tgt_label.setText(words.tgt_label)
        self.tgt.setPlaceholderText(words.tgt_placeholder)
        self.src.setToolTip(words.src_tip)
        chat_label, chat_tip = conversation_label(s.chat_messages())  # a conversation replaces the text
        if chat_label:
            self.src_label.setText(chat_label)
            self.src.setToolTip(chat_tip)
        self.clear.setToolTip(words.clear_tip)
        for w in (self.tgt_label, self.tgt, self.clear):
            w.setVisible(words.show_tgt)
        self.generate.setVisible(words.show_generate)
