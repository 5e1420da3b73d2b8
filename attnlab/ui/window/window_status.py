"""The main window's status bar (device, timings, token counts, notices, busy) and the banner above the
stage that says when the numbers mean nothing (a mixin of MainWindow)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QMessageBox, QProgressBar, QPushButton

from attnlab.present.status_texts import (  # noqa: F401 (main_window and the tests import them from here)
    CLASSROOM_NOTE,
    RANDOM_BANNER,
    WIDEST_TIMING,
    banner,
    classroom_description,
    failed_open_text,
    status_texts,
    still_showing,
)
from attnlab.ui.window.steady import FixedSizeLabel, SteadyBox

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace
    from attnlab.ui.window.window_host import WindowHost
else:
    WindowHost = object  # the type checker's view of MainWindow (window_host.py)

CANCEL_AFTER_MS = 1000  # a run still going after this long gets the Cancel button (a load gets it at once)


class WindowStatus(WindowHost):
    """Builds the status bar widgets and the banner, and fills them from a trace."""

    last_paint_ms = 0.0

    def _build_status_bar(self) -> None:
        self.banner = QLabel(wordWrap=True)
        self.banner.setObjectName("banner")
        # a line more or less does not resize the stage below, and a new text lays out nothing (steady.py)
        self.banner_box = SteadyBox(self.banner)
        self.banner_box.setVisible(False)
        self.device_label = QLabel()
        self.device_label.setObjectName("deviceLabel")
        # a fixed size, room for the widest timing: a label that may grow and shrink with its digits relays
        # out and repaints the whole status bar on every toggle
        self.timing_label = FixedSizeLabel(WIDEST_TIMING, "timingLabel")
        self.tokens_label = QLabel()
        self.tokens_label.setObjectName("tokensLabel")
        self.notice_label = QLabel()
        self.notice_label.setObjectName("noticeLabel")
        self.busy = QProgressBar(minimum=0, maximum=0, textVisible=False)
        self.busy.setObjectName("busyIndicator")
        self.busy.setMaximumWidth(120)
        self.busy.setVisible(False)
        bar = self.statusBar()
        for w in (self.device_label, self.timing_label, self.tokens_label):
            bar.addPermanentWidget(w)
        bar.addWidget(self.notice_label, 1)
        bar.addPermanentWidget(self.busy)
        # opening a file runs on the worker and may take long (a huge or hostile file): it can be cancelled
        self.cancel_load_button = QPushButton("Cancel")
        self.cancel_load_button.setObjectName("cancelLoadButton")
        self.cancel_load_button.setVisible(False)
        self.cancel_load_button.setToolTip("Stop opening this model and keep the one shown")
        self.cancel_load_button.clicked.connect(self._cancel_load)
        bar.addPermanentWidget(self.cancel_load_button)

    def _show_status(self, trace: Trace) -> None:
        texts = status_texts(trace, self.session.model, self.last_paint_ms)
        notices = texts.notices
        if self.device_label.toolTip() != texts.device_tip:
            self.device_label.setToolTip(texts.device_tip)
        for label, text in (
            (self.device_label, texts.device),  # precision: issue 23
            (self.timing_label, texts.timing),
            (self.tokens_label, texts.tokens),
            (self.notice_label, " · ".join(notices)),
        ):
            if label.text() != text:  # setText lays out the status bar even for the same text
                label.setText(text)
        if self.notice_label.toolTip() != "\n".join(notices):
            self.notice_label.setToolTip("\n".join(notices))

    def _update_banner(self, trace: Trace) -> None:
        """Say when the numbers mean nothing: a random model, a notice from the loader, unknown tokens;
        for a classroom model, a quieter note that it only knows its small training language."""
        s = self.session
        final_step = s.snapshots.final_step if s.snapshots is not None else None
        text, level = banner(trace, s.model, s.src, s.tgt, final_step)
        if text != self.banner.text():
            self.banner.setText(text)
            self.banner_box.fit()
        if self.banner.property("level") != level:  # re-polishing restyles (and repaints) the window
            self.banner.setProperty("level", level)
            self.banner.style().unpolish(self.banner)
            self.banner.style().polish(self.banner)
        self.banner_box.setVisible(bool(text))

    def _on_model_failed(self, message: str) -> None:
        self.statusBar().showMessage(failed_open_text(getattr(self, "opening", ""), self.session.model))
        QMessageBox.warning(self, "Could not open the model", message)

    def _offer_cancel(self) -> None:
        self.cancel_load_button.setVisible(self.session.busy)

    def _cancel_load(self) -> None:
        if self.session.cancel():
            what = getattr(self, "opening", "") or "the model"
            name = Path(what).name if not what.startswith("the bundled") else what
            self.statusBar().showMessage(f"Stopped opening {name} — {still_showing(self.session.model)}", 10000)

    def _on_failed(self, message: str) -> None:
        line = "Not run: " + message.replace("\n", " ")
        self.statusBar().showMessage(line, 10000)
        if self.session.trace is None:  # nothing drawn yet: the panel says why instead of "Loading…" for ever
            self.placeholder.setText(line)
            self.placeholder.setWordWrap(True)
            self.stage_title.setText("Nothing to show yet")

    def _on_streamed(self, k: int, n: int) -> None:
        """A layer of a spread-out model streams in: the busy bar counts them ("layer 3 of 10 streaming")."""
        self.busy.setRange(0, n)
        self.busy.setValue(k)
        self.busy.setFormat(f"layer {k} of {n} streaming")
        self.busy.setTextVisible(True)
        self.busy.setMaximumWidth(220)
        self.busy.setToolTip("Layers kept in the computer's memory or on disk are brought in one at a time")

    def _on_busy(self, busy: bool) -> None:
        if not busy:  # back to the plain "working" bar for the next run
            self.busy.setRange(0, 0)
            self.busy.setTextVisible(False)
            self.busy.setMaximumWidth(120)
        self.busy.setVisible(busy)
        if busy:  # a run that takes long (a slow tokenizer, a big model) can be cancelled too
            QTimer.singleShot(CANCEL_AFTER_MS, self.cancel_load_button, self._offer_cancel)
        elif not self.session.loading:
            self.cancel_load_button.setVisible(False)
