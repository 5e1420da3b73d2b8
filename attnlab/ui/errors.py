"""Never crash: uncaught exceptions (GUI thread or any other thread) become a non-modal message with the
traceback behind "Show Details…", and the app keeps running."""

from __future__ import annotations

import sys
import threading
import traceback

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QMessageBox, QWidget


def describe(exc_type, exc, tb) -> tuple[str, str]:
    """(one-line summary, full traceback) of an exception."""
    summary = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
    return summary, "".join(traceback.format_exception(exc_type, exc, tb))


class ErrorReporter(QObject):
    """Installs sys.excepthook and threading.excepthook; shows one reusable non-modal message box."""

    errorRaised = Signal(str, str)  # summary, details: may be emitted from any thread

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.window = parent
        self.box: QMessageBox | None = None
        self.count = 0
        self.history: list[str] = []  # summaries, newest last (for tests and the details text)
        self._previous = None
        self.errorRaised.connect(self.show_error, Qt.ConnectionType.QueuedConnection)

    def install(self) -> None:
        if self._previous is None:
            self._previous = (sys.excepthook, threading.excepthook)
            sys.excepthook = self.excepthook
            threading.excepthook = self.thread_excepthook

    def uninstall(self) -> None:
        if self._previous is not None:
            sys.excepthook, threading.excepthook = self._previous
            self._previous = None

    def excepthook(self, exc_type, exc, tb) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        summary, details = describe(exc_type, exc, tb)
        print(details, file=sys.stderr, end="")
        try:
            self.errorRaised.emit(summary, details)
        except RuntimeError:  # the window is gone; the traceback above is all we can do
            pass

    def thread_excepthook(self, args) -> None:
        if args.exc_type is SystemExit:
            return
        self.excepthook(args.exc_type, args.exc_value, args.exc_traceback)

    @Slot(str, str)
    def show_error(self, summary: str, details: str) -> None:
        self.count += 1
        self.history.append(summary)
        if self.box is None:
            self.box = QMessageBox(
                QMessageBox.Icon.Warning,
                "attnlab: something went wrong",
                "",
                QMessageBox.StandardButton.Close,
                self.window,
            )
            self.box.setObjectName("errorMessage")
            self.box.setWindowModality(Qt.WindowModality.NonModal)
            self.box.finished.connect(self._closed)
        more = f"\n\n({self.count} errors since this message opened)" if self.count > 1 else ""
        self.box.setText("An error occurred. The app keeps running and your model and sentence are kept.")
        self.box.setInformativeText(summary + more)
        self.box.setDetailedText(details)
        self.box.show()

    def _closed(self, _result) -> None:
        self.count = 0
