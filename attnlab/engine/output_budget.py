"""Whether an output fits before it starts (issue 38): the memory a file, an export, a merged adapter, a
dequantized weight or a patching map will hold, against what this process may still allocate
(memory.host_available, ATTNLAB_MEMORY_LIMIT included, at budget.HEADROOM), and a file's size against the free
space of the folder it goes to (shutil.disk_usage). Each refusal is one line: what, needed, available. Qt-free.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from attnlab.engine.budget import HEADROOM
from attnlab.engine.memory import RunTooBig, host_available
from attnlab.limits import gb


def amount(n: float) -> str:
    """Bytes as a refusal writes them: "4.9 GB" and "12 MB" as limits.gb writes them, below a megabyte in kB
    and bytes (never "0 MB")."""
    if n >= 999_500:  # what rounds to 1 MB or more
        return gb(n)
    if n >= 999.5:
        return f"{n / 1e3:.0f} kB"
    n = max(round(n), 0)
    return f"{n:,} byte{'' if n == 1 else 's'}"


def memory_room() -> int:
    """Bytes an output may use on the host: HEADROOM of what this process can still allocate."""
    return int(HEADROOM * host_available())


def memory_refusal(what: str, needed: int, room: int | None = None) -> str:
    """Why `what`, which holds `needed` bytes of host memory at its peak, cannot start (empty: it fits).
    `room`: the bytes available (default memory_room())."""
    room = memory_room() if room is None else room
    if needed <= room:
        return ""
    return f"{what} needs about {amount(needed)} of memory, but only {amount(room)} is available"


def existing_folder(path: str | os.PathLike[str]) -> Path:
    """The folder a file at `path` goes to, or its nearest ancestor that exists (what disk_usage can ask about)."""
    folder = Path(path).expanduser().absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def disk_refusal(what: str, path: str | os.PathLike[str], needed: int) -> str:
    """Why `what`, a file of `needed` bytes at `path`, cannot be written: the free space of its folder (empty: it
    fits, or the free space cannot be read, and writing will say what went wrong). An existing file it replaces
    keeps its space while the new one is written (attnlab.fileio.atomic_write writes a temporary file beside it
    first), so it is not counted free."""
    folder = existing_folder(path)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    if needed <= free:
        return ""
    return f"{what} needs about {amount(needed)} on disk, but the folder {str(folder)!r} has only {amount(free)} free"


def check_memory(what: str, needed: int) -> None:
    """RunTooBig (one line: needed, available) when `what` cannot hold `needed` bytes of host memory."""
    refusal = memory_refusal(what, needed)
    if refusal:
        raise RunTooBig(refusal)
