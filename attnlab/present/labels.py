"""Token text as people read it on screen, with no Qt: control characters escaped, blank tokens made visible,
long labels shortened: the one rule for every axis, chip and bar label (ui/plots/matrix_data.py re-exports it)."""

from __future__ import annotations

from attnlab.present.facts import PREDICTS

MAX_LABEL_CHARS = 12
_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}


def printable_label(label: object) -> str:
    """Token text made visible: control characters escaped, empty / blank tokens shown as ␣."""
    s = str(label)
    if any(ch in s for ch in _CONTROL_ESCAPES):
        s = "".join(_CONTROL_ESCAPES.get(ch, ch) for ch in s)
    if not s.strip():
        s = "␣" * max(1, len(s))
    return s


def elide_label(label: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """Printable label shortened to `max_chars` characters with a trailing '…'; a decoder row's
    "input → predicted" label keeps both tokens, each shortened on its own."""
    s = printable_label(label)
    if PREDICTS in s:
        return PREDICTS.join(elide_label(part, max_chars) for part in s.split(PREDICTS, 1))
    if len(s) > max_chars:
        s = s[: max(1, max_chars - 1)] + "…"
    return s
