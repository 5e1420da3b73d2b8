"""JobRunner: one worker thread, LATEST REQUEST WINS, and no Qt (the Session turns it into signals).

Every request of a kind ("load", "trace", "warm") bumps that kind's generation; at most one job runs and at
most one of each kind waits (a newer request replaces the waiting one); a result whose generation is no
longer the latest is stale. A job ends in a value or a one-line message, never in an exception. The result
is handed to `deliver` on the worker thread; the owner passes it back to `finished` on its own thread, which
starts the next waiting job and says whether the result is current.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE_CHARS = 2000  # a failed job's message is cut to this many characters


@dataclass(frozen=True)
class Job:
    kind: str  # one of the runner's kinds
    generation: int  # the kind's generation when it was asked for: stale once another of its kind is
    run: Callable[[], Any]  # run on the worker thread


def error_message(error: BaseException) -> str:
    """What a failed job says: attnlab's own errors (ValueError) are written to be read and say only their
    text; anything else is named by its type too."""
    readable = isinstance(error, ValueError) and str(error)
    text = str(error) if readable else (f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "…"


class JobRunner:
    """Runs jobs one at a time on a worker thread; the latest request of each kind wins.

    `kinds`: the job kinds, in the order waiting ones start. `supersedes`: kind -> the kinds a request of it
    makes stale (a new model's load: the old model's traces). `prepare`: called once on the worker before its
    first job (e.g. torch's thread settings). `deliver(job, value, error)`: called on the worker with each
    result (value None and a message on failure)."""

    def __init__(
        self,
        deliver: Callable[[Job, Any, str | None], None],
        kinds: tuple[str, ...],
        supersedes: Mapping[str, tuple[str, ...]] | None = None,
        prepare: Callable[[], object] | None = None,
        name: str = "attnlab-run",
    ) -> None:
        self._deliver = deliver
        self._kinds = kinds
        self._supersedes = dict(supersedes or {})
        self._prepare = prepare
        self._generation = dict.fromkeys(kinds, 0)
        self._running: Job | None = None
        self._waiting: dict[str, Job] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    # ---- state -------------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """Whether a job runs or waits."""
        return self._running is not None or bool(self._waiting)

    def pending(self, kind: str) -> bool:
        """Whether a current job of `kind` runs or waits (its result not yet accepted or dropped)."""
        job = self._running
        running = job is not None and job.kind == kind and self.current(job)
        return running or kind in self._waiting

    def current(self, job: Job) -> bool:
        """Whether `job` is the latest request of its kind."""
        return job.generation == self._generation[job.kind]

    # ---- requests ----------------------------------------------------------------------------------------
    def submit(self, kind: str, run: Callable[[], Any]) -> None:
        """Ask for `run` on the worker: now when nothing runs, else after the running job (replacing a
        waiting one of its kind)."""
        self._generation[kind] += 1
        for stale in self._supersedes.get(kind, ()):
            self.drop(stale)
        job = Job(kind, self._generation[kind], run)
        if self._running is None:
            self._start(job)
        else:
            self._waiting[kind] = job

    def drop(self, kind: str) -> None:
        """Make the job of `kind` under way stale and forget a waiting one."""
        self._generation[kind] += 1
        self._waiting.pop(kind, None)

    def invalidate(self, kind: str) -> None:
        """Make the jobs of `kind` asked for so far stale (a waiting one still runs; its result is dropped)."""
        self._generation[kind] += 1

    def finished(self, job: Job) -> bool:
        """Call on the owner's thread with a delivered job: starts the next waiting job, and says whether the
        result is current (False: drop it)."""
        self._running = None
        for kind in self._kinds:
            if kind in self._waiting:
                self._start(self._waiting.pop(kind))
                break
        return self.current(job)

    def shutdown(self) -> None:
        """Drop waiting work and let the running job finish in the background."""
        self._waiting.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- the worker --------------------------------------------------------------------------------------
    def _start(self, job: Job) -> None:
        self._running = job
        self._pool.submit(self._work, job)

    def _work(self, job: Job) -> None:  # worker thread
        if self._prepare is not None:
            self._prepare()
            self._prepare = None
        try:
            value, error = job.run(), None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: B036  every job ends in a result or a message, even after a panic
            value, error = None, error_message(e)
        self._deliver(job, value, error)
