"""What the tokenization stage says about the special tokens around a side's text: the ones this model's tokenizer
really added (trace.info["specials"], written by engine/live.LiveModel.wrapping), not a classroom model's
"</s> at the end". Qt-free; rich text as the explanation pages take it.

    BERT:     "The tokenizer puts [CLS] before the text and [SEP] after it: …"
    GPT-2:    "This tokenizer adds no special tokens: every token is a piece of the text."
    Marian:   "The tokenizer puts </s> after the text: …"
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

# what a special token is for, by the strings tokenizers commonly give it
PURPOSE = {
    "[CLS]": "its final vector is the one a sentence classifier reads",
    "[SEP]": "it marks where a sentence ends (and separates two sentences)",
    "</s>": "it marks where the text ends",
    "<s>": "it marks where the text starts",
    "<|begin_of_text|>": "it marks where the text starts",
    "<bos>": "it marks where the text starts",
    "<pad>": "the decoder's start token: the first thing it reads before it has predicted anything",
}


def wrapping(trace: Trace, side: str) -> dict[str, list[str]] | None:
    """The specials around `side` as the run's tokenizer added them, or None for a trace made without that
    record (an old .npz)."""
    found = trace.info.get("specials", {}).get(side)
    return found if isinstance(found, dict) else None


def _names(tokens: list[str]) -> str:
    return " ".join(html.escape(t) for t in tokens)


def _purposes(tokens: list[str]) -> str:
    said = [f"{html.escape(t)}: {PURPOSE[t]}" for t in dict.fromkeys(tokens) if t in PURPOSE]
    return f" ({'; '.join(said)})" if said else ""


def specials_sentence(trace: Trace, side: str) -> str:
    """One sentence on the special tokens the tokenizer put around `side`'s text ('' when not known)."""
    wrap = wrapping(trace, side)
    if wrap is None:
        return ""
    before, after, between = wrap.get("before", []), wrap.get("after", []), wrap.get("between", [])
    if not (before or after or between):
        return "This tokenizer adds no special tokens: every token is a piece of the text."
    where = []
    if before:
        where.append(f"{_names(before)} before the text")
    if between:
        where.append(f"{_names(between)} between the two sentences")
    if after:
        where.append(f"{_names(after)} after {'it' if before else 'the text'}")
    return (
        f"The tokenizer puts {' and '.join(where)}{_purposes(before + between + after)}. They are not words of "
        "the sentence, but the model reads them like any other token."
    )


def count_text(trace: Trace, side: str, tokens: list[str]) -> str:
    """' (7 pieces of the text + 2 special)' for 9 tokens ('' when the specials are not known or none); padding
    at the end is counted apart (' + 3 padding')."""
    wrap = wrapping(trace, side)
    if wrap is None:
        return ""
    real = len(tokens)
    while real and tokens[real - 1] == "<pad>" and wrap.get("before") != ["<pad>"] * real:
        real -= 1
    added = sum(len(wrap.get(part, [])) for part in ("before", "between", "after"))
    padding = f" + {len(tokens) - real} padding" if real < len(tokens) else ""
    if not added or added > real:
        return f" ({real} pieces of the text{padding})" if padding else ""
    return f" ({real - added} pieces of the text + {added} special{padding})"
