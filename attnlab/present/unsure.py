"""Where the model is unsure of its next token (Qt-free): the decoder positions whose most probable token has
less than UNSURE_BELOW probability. Greedy decoding takes that token anyway, so the output may go wrong
there; the output stage says so (the same threshold as `attnlab translate` and LiveModel.generate)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.engine.typed import UNSURE_BELOW, percent_below
from attnlab.present.texts import real_length

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def unsure_positions(trace: Trace) -> list[tuple[int, float]]:
    """(decoder position, top probability) for each real decoder position whose top probability is below
    UNSURE_BELOW; empty for a model without a decoder or a run without probabilities."""
    tokens = trace.get(names.side_entry("tgt", "tokens"))
    if not tokens or names.PROBS not in trace:
        return []
    found = []
    for position in range(real_length(list(tokens))):
        top = float(trace.read(names.PROBS, position).max())  # one row [V] crosses to the host
        if top < UNSURE_BELOW:
            found.append((position, top))
    return found


def unsure_sentence(trace: Trace, limit: int = 6) -> str:
    """The output stage's cue ('' when the model is sure everywhere): positions counted from 1."""
    found = unsure_positions(trace)
    if not found:
        return ""
    shown = ", ".join(f"{position + 1} ({percent_below(top)})" for position, top in found[:limit])
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return (
        f"<b>Unsure:</b> at decoder position{'s' if len(found) > 1 else ''} {shown}{more} the most likely next "
        f"token has less than {UNSURE_BELOW:.0%}; greedy decoding takes it anyway, so the output may go wrong "
        "there."
    )
