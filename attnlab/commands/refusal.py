"""How every command refuses: one line on stderr, `attnlab COMMAND: what is wrong`, and exit status 2 (issue 38.6).

A message that lists several problems ("Cannot load …; 3 problems:\\n- a\\n- b\\n- c") becomes
"Cannot load …; 3 problems: a; b; c"; any other line break or control character becomes a space, so a hostile
file name or a multi-line error from a library cannot start a second line. cli.py, the app and each command
print their refusals through `refuse` (or `one_line` where the words go elsewhere).
"""

from __future__ import annotations

import re
import sys

LIMIT = 2000  # characters of a refusal; a longer one ends with "…"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ITEM = re.compile(r"^(?:[-*•]|\(?\d+[.)])\s+")  # "- a", "* a", "1. a", "(2) a": one problem of a list


def one_line(error: BaseException | str, limit: int = LIMIT) -> str:
    """`error`'s message on one line: the lines of a list joined with '; ' (after a line ending in ':', a
    space), cut to `limit` characters; the error's type name when it has no message."""
    text = str(error)
    lines = [_CONTROL.sub(" ", line).strip() for line in text.splitlines()]
    parts = [_ITEM.sub("", line) if i else line for i, line in enumerate(lines) if line]
    if not parts:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    out = parts[0]
    for part in parts[1:]:
        out += (" " if out.endswith((":", ";")) else "; ") + part
    out = re.sub(r" {2,}", " ", out)
    return out if len(out) <= limit else out[:limit] + "…"


def refuse(prog: str, error: BaseException | str, code: int = 2) -> int:
    """Print `prog: <error on one line>` on stderr; returns `code` (2: bad input) for the command to return."""
    print(f"{prog}: {one_line(error)}", file=sys.stderr)
    return code
