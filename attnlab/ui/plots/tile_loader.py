"""TileLoader: a long input's overview tiles read off the GUI thread, one head at a time.

Reading the tiles of one head of an 8,192-token map is one pass over its 67 million cells (about a second on a
laptop core): the heads grid reads 8 such heads, the model view 64. The views ask for them here; each job (a
plain function from present/, Qt-free) runs on one background thread, and its result comes back to the GUI
thread through a queued signal, so the window keeps answering while the thumbnails fill in. A newer `start`
supersedes the jobs of the one before (those not started yet are skipped; a result that arrives late is
dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from PySide6.QtCore import QCoreApplication, QObject, Signal


class TileLoader(QObject):
    """Runs jobs off the GUI thread; `ready(generation, index, value)` brings each result back."""

    ready = Signal(int, int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attnlab-tiles")
        self.generation = 0
        self.pending = 0  # jobs of the current generation not back yet
        self.ready.connect(self._arrived)
        app = QCoreApplication.instance()
        if app is not None:  # jobs still queued at exit would each run before Python could end: skip them
            app.aboutToQuit.connect(self.cancel)

    def start(self, jobs: Sequence[Callable[[], object]]) -> int:
        """Run `jobs` in order (dropping any earlier ones not done); returns their generation."""
        self.generation += 1
        self.pending = len(jobs)
        for index, job in enumerate(jobs):
            self._pool.submit(self._run, self.generation, index, job)
        return self.generation

    def cancel(self) -> None:
        self.generation += 1
        self.pending = 0

    def busy(self) -> bool:
        return self.pending > 0

    def _run(self, generation: int, index: int, job: Callable[[], object]) -> None:
        if generation != self.generation:  # superseded before it started
            return
        try:
            value: object = job()
        except Exception as error:  # handed to the receiver, never lost on the thread
            value = error
        self.ready.emit(generation, index, value)

    def _arrived(self, generation: int, _index: int, _value: object) -> None:
        if generation == self.generation and self.pending > 0:
            self.pending -= 1

    def shutdown(self) -> None:
        self.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
