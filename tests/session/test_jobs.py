"""The session's job runner without Qt (attnlab/jobs.py): one job at a time, the latest request of each kind
wins, a stale result is dropped, and a failed job ends in a message."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest

from attnlab.jobs import MAX_MESSAGE_CHARS, Job, JobRunner, error_message

WAIT_S = 10.0


class Owner:
    """What the Session does with the runner: results come back on a queue, `finished` runs on this thread."""

    def __init__(self, **runner: Any) -> None:
        self.results: queue.Queue[tuple[Job, Any, str | None]] = queue.Queue()
        self.runner = JobRunner(lambda job, value, error: self.results.put((job, value, error)), **runner)

    def next_result(self) -> tuple[Any, str | None, bool]:
        job, value, error = self.results.get(timeout=WAIT_S)
        return value, error, self.runner.finished(job)


def held(gate: threading.Event, value: str) -> Callable[[], str]:
    def run() -> str:
        assert gate.wait(WAIT_S)
        return value

    return run


def test_the_latest_request_wins_and_the_one_in_between_never_runs():
    owner = Owner(kinds=("trace",))
    gate, ran = threading.Event(), []
    owner.runner.submit("trace", held(gate, "first"))
    owner.runner.submit("trace", lambda: ran.append("second") or "second")
    owner.runner.submit("trace", lambda: ran.append("third") or "third")
    assert owner.runner.busy and owner.runner.pending("trace")
    gate.set()
    assert owner.next_result() == ("first", None, False)  # a newer request came: stale
    assert owner.next_result() == ("third", None, True)
    assert ran == ["third"] and not owner.runner.busy
    owner.runner.shutdown()


def test_waiting_jobs_start_in_the_order_of_the_kinds_and_a_load_drops_the_traces():
    owner = Owner(kinds=("load", "trace", "warm"), supersedes={"load": ("trace",)})
    gate = threading.Event()
    owner.runner.submit("warm", held(gate, "warm"))
    owner.runner.submit("trace", lambda: "trace")
    owner.runner.submit("warm", lambda: "warm again")
    owner.runner.submit("load", lambda: "load")  # the trace waiting is of the old model: dropped
    gate.set()
    assert owner.next_result() == ("warm", None, False)
    assert owner.next_result() == ("load", None, True)
    assert owner.next_result() == ("warm again", None, True)
    assert owner.results.empty() and not owner.runner.busy
    owner.runner.shutdown()


def test_a_dropped_or_invalidated_kind_delivers_nothing_current():
    owner = Owner(kinds=("load", "warm"))
    gate = threading.Event()
    owner.runner.submit("load", held(gate, "model"))
    owner.runner.drop("load")
    assert not owner.runner.pending("load") and owner.runner.busy  # it still runs; its result will be stale
    gate.set()
    assert owner.next_result() == ("model", None, False)
    owner.runner.submit("warm", lambda: "warmed")
    owner.runner.invalidate("warm")
    assert owner.next_result() == ("warmed", None, False)
    owner.runner.shutdown()


def test_a_failed_job_ends_in_a_message_and_prepare_runs_once_on_the_worker():
    prepared: list[str] = []
    owner = Owner(kinds=("trace",), prepare=lambda: prepared.append(threading.current_thread().name))

    def broken() -> None:
        raise ValueError("the source gives no token this model can read")

    owner.runner.submit("trace", broken)
    assert owner.next_result() == (None, "the source gives no token this model can read", True)
    owner.runner.submit("trace", lambda: 1 / 0)
    assert owner.next_result() == (None, "ZeroDivisionError: division by zero", True)
    assert len(prepared) == 1 and prepared[0] != threading.current_thread().name
    owner.runner.shutdown()


@pytest.mark.parametrize(
    ("error", "message"),
    [(ValueError("bad input"), "bad input"), (KeyError("x"), "KeyError: 'x'"), (MemoryError(), "MemoryError")],
)
def test_error_messages_name_what_is_not_ours(error, message):
    assert error_message(error) == message


def test_a_long_message_is_cut():
    text = error_message(ValueError("x" * (MAX_MESSAGE_CHARS * 2)))
    assert len(text) == MAX_MESSAGE_CHARS + 1 and text.endswith("…")
