"""The one page layout every explanation uses, and the small readers of a trace they share. Qt-free.

`page(title, formula, sentences, shapes)` writes the HTML fragment of one stage's explanation; `shape_of`,
`tokens_of` and `token_word` read the live shapes and tokens of a run for it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

DM, DK, DFF = "d<sub>model</sub>", "d<sub>k</sub>", "d<sub>ff</sub>"


def token_word(side: str) -> str:
    """'src' -> 'source' (as in "7 source tokens")."""
    return words.word(f"{side}.short")


def _formula(text: str) -> str:
    return f"<p style='font-size:large; font-family:serif'>{text}</p>"


def shape_of(trace: Trace, name: str) -> tuple[int, ...] | None:
    """The shape of the trace entry `name` ((n,) for a list), or None when the trace does not hold it."""
    from attnlab.present.views.long_map import long_shape  # a long map: its shape, without reading it

    if (shape := long_shape(trace, name)) is not None:
        return tuple(int(n) for n in shape)
    value = trace.get(name)
    if value is None:
        return None
    return (len(value),) if isinstance(value, list) else tuple(int(n) for n in value.shape)


def page(title: str, formula: str, sentences: list[str], shapes: str = "") -> str:
    """One explanation: a title, the formula (if any), the sentences, and the live shapes of this run."""
    body = " ".join(s for s in sentences if s)
    parts = [f"<h3>{html.escape(title)}</h3>"]
    if formula:
        parts.append(_formula(formula))
    parts.append(f"<p>{body}</p>")
    if shapes:
        parts.append(f"<p><b>In this run:</b> {shapes}</p>")
    return "\n".join(parts)


def tokens_of(trace: Trace, side: str) -> list[str]:
    """The tokens of one side ('src' / 'tgt') of the run, as text."""
    return [str(t) for t in trace.get(names.side_entry(side, "tokens")) or []]


def model_note(sentences: list[str]) -> str:
    """The paragraph a page ends with on what this model does otherwise ('' with nothing to say)."""
    sentences = [s for s in sentences if s]
    return f"\n<p><b>This model:</b> {' '.join(sentences)}</p>" if sentences else ""
