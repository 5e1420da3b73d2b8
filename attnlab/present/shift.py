"""The one-position shift between the decoder's input and what it predicts, said once, on the decoder input
(tokens) stage. The rows of every later decoder stage follow it: facts.row_labels labels them "input →
predicted". Qt-free; rich text as the explanation pages take it (&lt; for <)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from attnlab.engine import names

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

TRANSLATION_SHIFT = (
    "The decoder input is the translation shifted one place to the right: {start} first, then the translation "
    "so far, so the token at position t + 1 is the one position t must predict. In training the whole reference "
    "is the input except its final end token, which is only ever predicted, never read. "
)
ROWS_PREDICT = (
    "Position t sees only the tokens up to t (the causal mask): in training the reference's (teacher forcing), "
    "while generating the model's own earlier guesses. That is why the decoder panels (attention, add &amp; "
    "norm, feed-forward, the output bars) label each row “input → predicted”, e.g. &lt;s&gt; → le: every row "
    "but the last names the next input token, the one it is trained to predict; the last row names the model's "
    "own most likely next token."
)


def decoder_input_role(trace: Trace) -> str:
    """What the decoder input is and why its rows are labelled "input → predicted" (encoder-decoder: the
    shifted translation; decoder-only: the prompt, whose every position predicts the next)."""
    translating = names.side_entry("src", "tokens") in trace
    if not translating:
        return ROWS_PREDICT
    tokens = trace.get(names.side_entry("tgt", "tokens"), [])
    start = html.escape(tokens[0]) if tokens else "the start token"
    return TRANSLATION_SHIFT.format(start=start) + ROWS_PREDICT
