"""CheckpointError and the list that collects every problem before one error is raised."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from attnlab.limits import EXCERPT_CHARS, cut, excerpt

MAX_PROBLEMS = 20  # problems listed in one message
MAX_LISTED = 12  # longer lists of tensor names are cut to this many plus "... and N more"


class CheckpointError(ValueError):
    """A checkpoint could not be read or written; the message lists every problem found, in plain words."""


def name_list(names: Iterable[str], limit: int = MAX_LISTED) -> str:
    """'a, b, c' or 'a, b, … and 40 more' for long lists."""
    names = list(names)
    shown = ", ".join(excerpt(n) if len(str(n)) > EXCERPT_CHARS else str(n) for n in names[:limit])
    return shown if len(names) <= limit else f"{shown}, … and {len(names) - limit} more"


class Problems:
    """Problems found while reading one checkpoint; `raise_if_any()` turns them into one CheckpointError."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.items: list[str] = []

    def add(self, text: str) -> None:
        """One problem, cut to a readable length (a value in a hostile file can be megabytes long)."""
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(cut(text))
        elif len(self.items) == MAX_PROBLEMS:
            self.items.append("… and more problems")

    def __bool__(self) -> bool:
        return bool(self.items)

    def message(self) -> str:
        head = f"Cannot load the checkpoint {str(self.path)!r}"
        if len(self.items) == 1:
            return f"{head}: {self.items[0]}"
        return f"{head}; {len(self.items)} problems: " + "; ".join(self.items)  # one line (issue 38.6)

    def error(self) -> CheckpointError:
        """The one error that lists every problem (to raise where a problem was certainly added)."""
        return CheckpointError(self.message())

    def raise_if_any(self) -> None:
        if self.items:
            raise self.error()
