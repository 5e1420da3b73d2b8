"""What a checkpoint reader asks of a name in a model folder before it opens it (issue 38.6): nothing there, or a
regular file. A FIFO (named pipe), a device, a socket or a folder where a file is expected, or a link to one, is
refused in one line naming it ("config.json is a FIFO (named pipe), not a regular file", "tokenizer.json links to
a device (/dev/zero), not a regular file"), from stat alone: a FIFO is never opened (an open would block), a
device never read (/dev/zero never ends). Before, such a name was skipped as if it were absent: the folder became
"not a Hugging Face folder", the tokenizer silently another one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnlab.bounded_read import FileRefused, not_a_file


def regular_file(path: str | os.PathLike[str], what: str = "") -> Path:
    """`path`, when it is a regular file (links followed); FileRefused in one line otherwise (`what`: how the
    message names it, the file's name by default)."""
    path = Path(path)
    what = what or path.name
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileRefused(f"{what} {'links to nothing' if path.is_symlink() else 'is missing'}") from None
    except OSError as e:  # a link loop, no permission
        raise FileRefused(f"{what} cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(f"{what} {not_a_file(path, info.st_mode)}, not a regular file")
    return path


def has_file(folder: str | os.PathLike[str], name: str) -> bool:
    """Whether `folder` holds the file `name`: False when nothing is there by that name, True for a regular file
    (or a link to one); FileRefused when the name is there but is no file (see regular_file)."""
    path = Path(folder) / name
    if not os.path.lexists(path):
        return False
    regular_file(path, name)
    return True
