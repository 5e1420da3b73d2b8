"""Never crash: uncaught exceptions (GUI thread or any other thread) become a non-modal message with the
traceback behind "Show Details…", and the app keeps running.

Paint never raises: an exception that escapes a paint override reaches Qt through shiboken, which can take
the whole process down while reporting it (issue 27: a strided array handed to QImage did). Every paint
override attnlab owns is wrapped by `guarded_paint`: the exception is caught, logged once (the first of each
kind per class, with its traceback), shown in the window's status bar, and the item draws nothing more that
frame."""

from __future__ import annotations

import functools
import logging
import sys
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsItem, QMainWindow, QMessageBox, QWidget

log = logging.getLogger(__name__)
PaintMethod = TypeVar("PaintMethod", bound=Callable[..., Any])
_logged_paint_failures: set[tuple[str, str]] = set()  # (class, exception type) already logged
ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]
ThreadExceptHook = Callable[[threading.ExceptHookArgs], object]


def describe(exc_type: type[BaseException], exc: BaseException | None, tb: TracebackType | None) -> tuple[str, str]:
    """(one-line summary, full traceback) of an exception."""
    summary = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
    return summary, "".join(traceback.format_exception(exc_type, exc, tb))


class ErrorReporter(QObject):
    """Installs sys.excepthook and threading.excepthook; shows one reusable non-modal message box."""

    errorRaised = Signal(str, str)  # summary, details: may be emitted from any thread
    paintFailed = Signal(str)  # a one-line status-bar text: emitted while painting, shown after it

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.window = parent
        self.box: QMessageBox | None = None
        self.count = 0
        self.history: list[str] = []  # summaries, newest last (for tests and the details text)
        self._previous: tuple[ExceptHook, ThreadExceptHook] | None = None
        self.paint_failures = 0  # paints that raised and drew nothing (for tests)
        self.errorRaised.connect(self.show_error, Qt.ConnectionType.QueuedConnection)
        self.paintFailed.connect(self._show_paint_failure, Qt.ConnectionType.QueuedConnection)

    def install(self) -> None:
        if self._previous is None:
            self._previous = (sys.excepthook, threading.excepthook)
            sys.excepthook = self.excepthook
            threading.excepthook = self.thread_excepthook

    def uninstall(self) -> None:
        if self._previous is not None:
            sys.excepthook, threading.excepthook = self._previous
            self._previous = None

    def excepthook(self, exc_type: type[BaseException], exc: BaseException | None, tb: TracebackType | None) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc if exc is not None else exc_type(), tb)
            return
        summary, details = describe(exc_type, exc, tb)
        print(details, file=sys.stderr, end="")
        try:
            self.errorRaised.emit(summary, details)
        except RuntimeError:  # the window is gone; the traceback above is all we can do
            pass

    def thread_excepthook(self, args: threading.ExceptHookArgs) -> None:
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

    def _closed(self, _result: int) -> None:
        self.count = 0

    @Slot(str)
    def _show_paint_failure(self, text: str) -> None:
        bar = self.window.statusBar() if isinstance(self.window, QMainWindow) else None
        if bar is not None and bar.currentMessage() != text:  # every frame fails alike: say it once
            bar.showMessage(text)


def _window_of(painted: object) -> QWidget | None:
    """The top-level window that shows `painted` (a widget, or a graphics item in a scene with a view)."""
    if isinstance(painted, QWidget):
        return painted.window()
    scene = painted.scene() if isinstance(painted, QGraphicsItem) else None
    views = scene.views() if scene is not None else []
    return views[0].window() if views else None


def report_paint_failure(painted: object, exc: BaseException) -> None:
    """Log `exc` (once per class and exception type) and put one line in the status bar of `painted`'s window."""
    what = type(painted).__name__
    key = (what, type(exc).__name__)
    if key not in _logged_paint_failures:
        _logged_paint_failures.add(key)
        log.error("drawing %s failed; it draws nothing until the next change", what, exc_info=exc)
    window = _window_of(painted)
    reporter = getattr(window, "errors", None) if window is not None else None
    while window is not None and not isinstance(reporter, ErrorReporter):  # a dock or child window: its parent
        parent = window.parentWidget()
        window = parent.window() if parent is not None else None
        reporter = getattr(window, "errors", None) if window is not None else None
    if isinstance(reporter, ErrorReporter):
        reporter.paint_failures += 1
        summary, _ = describe(type(exc), exc, None)
        reporter.paintFailed.emit(f"Could not draw part of this view ({what}: {summary}); the app keeps running.")


def guarded_paint(method: PaintMethod) -> PaintMethod:
    """Wrap a paint override (`paint(painter, …)` of a graphics item, or `paintEvent(event)` of a widget) so
    that an exception is reported (`report_paint_failure`) instead of raised: the painter's state is put
    back, and whatever was drawn before the failure stays, the rest of the item is not drawn."""

    @functools.wraps(method)
    def guarded(self: object, first: object, *args: object, **kwargs: object) -> object:
        painter = first if isinstance(first, QPainter) else None
        if painter is not None:
            painter.save()
        try:
            return method(self, first, *args, **kwargs)
        except Exception as exc:  # nothing may escape into Qt's paint
            report_paint_failure(self, exc)
            return None
        finally:
            if painter is not None:
                painter.restore()

    return guarded  # type: ignore[return-value]
