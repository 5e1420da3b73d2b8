"""File → Get a model…: download a model from the Hugging Face Hub into its cache, then open it (issue 34).

The dialog takes an id (org/name[@revision]), shows a progress bar and a one-line status, and runs the download
on a worker thread (attnlab/checkpoints/hub_get.py: config, tokenizer and safetensors files only, never
pickles or code). Cancel stops it at the next chunk; nothing half-written is left in the cache. The worker
reports through a relay object's signals, which Qt delivers on the GUI thread.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from attnlab.checkpoints import hub_get
from attnlab.limits import cut

if TYPE_CHECKING:
    from attnlab.ui.window.window_host import WindowHost

STEPS = 1000  # the progress bar's range (bytes would overflow its int for files over 2 GB)


class _Relay(QObject):
    """Signals the worker emits; it outlives a closed dialog until the worker ends."""

    progress = Signal(int, int)  # bytes so far (as 1/STEPS of the whole), total bytes
    planned = Signal(str)  # what will be downloaded, in words
    finished = Signal(object)  # a Path (the snapshot folder), a str (why it failed) or None (cancelled)


class GetModelDialog(QDialog):
    """An id field, a progress bar, a status line, Download and Cancel. `got` carries the snapshot folder."""

    got = Signal(str)

    def __init__(
        self, parent: QWidget | None = None, *, cache_dir: str | Path | None = None, endpoint: str | None = None
    ):
        super().__init__(parent)
        self.setWindowTitle("Get a model from the Hugging Face Hub")
        self.setObjectName("getModelDialog")
        self.cache_dir = cache_dir
        self.endpoint = endpoint if endpoint is not None else hub_get.endpoint_now()
        self.cancel_flag: threading.Event | None = None
        self.worker: threading.Thread | None = None
        self.relay: _Relay | None = None
        self.model_id = QLineEdit()
        self.model_id.setObjectName("getModelId")
        self.model_id.setPlaceholderText("org/name or org/name@revision, e.g. HuggingFaceTB/SmolLM2-135M")
        self.bar = QProgressBar()
        self.bar.setObjectName("getModelProgress")
        self.bar.setRange(0, STEPS)
        self.bar.setValue(0)
        self.status = QLabel("Config, tokenizer and safetensors files only: never pickles or code.")
        self.status.setObjectName("getModelStatus")
        self.status.setWordWrap(True)
        self.buttons = QDialogButtonBox()
        self.download_button = QPushButton("Download")
        self.download_button.setObjectName("getModelDownload")
        self.download_button.setDefault(True)
        self.cancel_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.setObjectName("getModelCancel")
        self.buttons.addButton(self.download_button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Model id on the Hub:"))
        for widget in (self.model_id, self.bar, self.status, self.buttons):
            layout.addWidget(widget)
        self.download_button.clicked.connect(self.start)
        self.model_id.returnPressed.connect(self.start)
        self.cancel_button.clicked.connect(self.reject)
        self.resize(520, self.sizeHint().height())

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.is_alive()

    def start(self) -> None:
        """Check the id here (one line at once), then plan and download on a worker thread."""
        if self.running:
            return
        text = self.model_id.text()
        try:
            hub_get.parse_id(text)
        except hub_get.GetRefused as e:
            self.status.setText(str(e))
            return
        self.relay = relay = _Relay()  # deleted with the dialog, on this thread
        relay.progress.connect(self._on_progress)
        relay.planned.connect(self.status.setText)
        relay.finished.connect(self._on_finished)
        self.cancel_flag = cancel = threading.Event()
        self.model_id.setEnabled(False)
        self.download_button.setEnabled(False)
        self.bar.setValue(0)
        self.status.setText(f"Asking {self.endpoint or 'the Hub'} about {cut(text.strip(), 80)}…")
        self.worker = threading.Thread(
            target=_work, args=(text, self.cache_dir, self.endpoint, cancel, relay), name="attnlab-get", daemon=True
        )
        self.worker.start()

    def _on_progress(self, step: int, total: int) -> None:
        self.bar.setValue(step)

    def _on_finished(self, outcome: object) -> None:
        self.worker = None
        if isinstance(outcome, Path):
            self.bar.setValue(STEPS)
            self.got.emit(str(outcome))
            self.accept()
            return
        self.model_id.setEnabled(True)
        self.download_button.setEnabled(True)
        self.bar.setValue(0)
        if outcome is None:
            self.status.setText("Cancelled: nothing was written to the cache.")
        else:
            self.status.setText(str(outcome))

    def reject(self) -> None:
        """Cancel: stop a running download (the worker cleans up at its next chunk), then close."""
        if self.cancel_flag is not None and self.running:
            self.cancel_flag.set()
        super().reject()


def _work(
    text: str, cache_dir: str | Path | None, endpoint: str | None, cancel: threading.Event, relay: _Relay
) -> None:
    """The worker: plan, download, and one `finished` with the outcome."""
    outcome: object
    try:
        plan = hub_get.plan(text, endpoint=endpoint)
        relay.planned.emit(f"Downloading {plan.summary()}…")

        def progress(done: int, total: int) -> None:
            relay.progress.emit(STEPS * done // max(total, 1), total)

        outcome = hub_get.download(plan, cache_dir=cache_dir, endpoint=endpoint, progress=progress, cancel=cancel)
    except hub_get.Cancelled:
        outcome = None
    except hub_get.GetRefused as e:
        outcome = str(e)
    except Exception as e:  # one line, whatever it was
        outcome = f"The download failed ({type(e).__name__}: {cut(str(e), 200)})"
    relay.finished.emit(outcome)


def show_get_dialog(window: WindowHost) -> GetModelDialog:
    """File → Get a model…: the dialog, non-modal; a finished download opens in the window."""
    dialog = GetModelDialog(window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.got.connect(window.open_checkpoint)
    dialog.show()
    return dialog


def add_get_action(window: WindowHost, menu: QMenu) -> None:
    """File → Get a model…"""
    window._action(menu, "&Get a model…", lambda: show_get_dialog(window), [], "getModelAction")
