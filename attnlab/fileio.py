"""Every file attnlab writes goes through `atomic_write`: the content goes to a temporary file in the same
folder and is renamed over the target only once complete, so a failure (disk full, file-size limit, a crash)
never leaves a fragment in place of a good file. Plain Python: no torch, no Qt.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path


class WriteError(OSError):
    """A file could not be written; the message says which and why, and the old file (if any) is intact."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "the file could not be written"


def folder_problem(path: Path) -> str:
    """Why files cannot be created in `path`'s folder ('' when they can, as far as can be told)."""
    parent = path.parent if str(path.parent) else Path(".")
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                return f"{str(folder)!r} is a file, not a folder"
            break
    if not parent.exists():
        return f"the folder {str(parent)!r} does not exist"
    if path.exists() and not path.is_file():
        return f"{str(path)!r} is a folder or a device, not a regular file"
    return ""


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike[str], writer: Callable[[Path], object]) -> Path:
    """Call `writer(tmp_path)` to write the whole content to a temporary file next to `path`, flush it to
    disk and rename it over `path`. On any failure the temporary file is removed, `path` is left as it was,
    and a WriteError says why."""
    path = Path(path)
    problem = folder_problem(path)
    if problem:
        raise WriteError(f"cannot write {str(path)!r}: {problem}")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise WriteError(f"cannot write {str(path)!r}: {e.strerror or e}") from e
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer(tmp)
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _new_file_mode()
        os.chmod(tmp, mode)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        reason = e.strerror if isinstance(e, OSError) and e.strerror else (str(e).splitlines() or [""])[0][:200]
        raise WriteError(f"cannot write {str(path)!r}: {reason or type(e).__name__}; nothing was changed") from e
    return path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding=encoding))
