"""What the views say about a conversation a trace ran (trace.info["chat"], engine/chat_prompt.py): where each
token came from (the tokens stage colours its chips by it) and the turns' spans (attention maps mark them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace  # only read here: the input bar imports this module before torch loads

ORIGIN_WORDS = {
    "template": "template text",
    "role": "role tag",
    "words": "the person's words",
    "special": "special token",
}
CHAT_LEGEND = (
    "Chat: each chip is coloured by where it came from: the person's words (blue), role tags (violet), "
    "the template's own text (grey), special tokens (dashed)."
)
Span = tuple[str, int, int]  # (role, first position, last position + 1)


def _chat(trace: Trace, side: str) -> dict:
    chat = trace.info.get("chat")
    return chat if isinstance(chat, dict) and chat.get("side") == side else {}


def chip_origins(trace: Trace, side: str, n: int) -> list[str]:
    """Each of the side's `n` tokens' origin (ORIGIN_WORDS' keys; "" past the conversation: padding)."""
    origins = [str(o) for o in _chat(trace, side).get("provenance", [])]
    return (origins + [""] * n)[:n] if origins else []


def turn_spans(trace: Trace, side: str) -> tuple[Span, ...]:
    """The turns' spans of positions on `side` (empty when the run read no conversation there)."""
    return tuple((str(r), int(a), int(b)) for r, a, b in _chat(trace, side).get("turns", []))


def self_attention_spans(trace: Trace) -> tuple[Span, ...]:
    """The turns to mark on both axes of a decoder-only model's (self-)attention maps."""
    return turn_spans(trace, "tgt") if trace.config.arch == "decoder-only" else ()


def conversation_label(chat: tuple[list[dict[str, str]], bool] | None) -> tuple[str, str]:
    """(the first box's label, its tooltip) while the runs read a conversation (Session.chat_messages); ("", "")
    otherwise."""
    if chat is None:
        return "", ""
    turns = len(chat[0])
    return (
        f"Chat ({turns} turn{'s' if turns != 1 else ''}):",
        "The model reads the conversation from Stage → Conversation… (Ctrl+Shift+T), rendered by its chat "
        "template; typing here goes back to plain text.",
    )
