"""The decoder input and the sentence it was written for (issue 32, item 2). Qt-free.

A decoder input the model or a demo wrote (the start-up's greedy translation, Generate, a lesson's step)
follows the source: when the sentence changes, it becomes the model's own greedy translation of the new one
(`texts.default_prefix`, as at start-up: teacher forcing on its own output), or empty when there is nothing to
translate. One the person typed is kept, and while it stands beside another sentence the banner names the
sentence it was written for: cross-attention and the output would otherwise pair the new source with the old
translation without a word. Session (session.py) keeps the state; these are its rules and words.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace

# trace.info keys, set by the session's run (always, so a run reused for a repeated input never keeps a stale one)
WRITTEN_FOR = "decoder_input_written_for"  # (decoder input, the other sentence it was typed for), or None
FOLLOWED = "decoder_input_followed"  # (source, decoder input) when the run made the input follow its source


@dataclass(frozen=True)
class DecoderInput:
    """Where the decoder input came from: `typed` by the person (kept when the source changes) or not (the
    model's or a demo's: it follows), and the source sentence `written_for`."""

    typed: bool = False
    written_for: str = ""

    def follows(self, config: ModelConfig | None) -> bool:
        """Whether a new source sentence replaces this decoder input: only an encoder-decoder's decoder input
        translates the source (sentence B of a pair and a decoder-only prompt stand on their own)."""
        return config is not None and config.has_encoder and config.has_decoder and not self.typed

    def written(self, src: str, typed: bool) -> DecoderInput:
        """Set anew for the sentence `src`, by the person (`typed`) or by the model or a demo."""
        return DecoderInput(typed=typed, written_for=src)

    def generated(self, src: str) -> DecoderInput:
        """Generate appended the model's token: a typed input stays the person's (and stays written for its
        sentence); the model's own is now the model's for `src`."""
        return self if self.typed else replace(self, written_for=src)

    def stale_for(self, src: str, tgt: str) -> str | None:
        """The other sentence a typed, non-empty decoder input was written for, or None when it is this one's."""
        if not self.typed or not tgt.strip() or self.written_for == src:
            return None
        return self.written_for


def written_for_banner(trace: Trace) -> str:
    """The banner line for a typed decoder input kept beside a sentence it was not written for ('' otherwise)."""
    stale = trace.info.get(WRITTEN_FOR)
    if not stale:
        return ""
    tgt, other = stale
    return (
        f"The decoder input “{tgt}” was typed for another sentence, “{other}”, and is read here beside this one. "
        "Type one for this sentence, or Clear it."
    )
