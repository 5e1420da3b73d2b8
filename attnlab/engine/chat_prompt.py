"""A conversation as an instruct model reads it: rendered by its chat template, tokenized as
`apply_chat_template(..., tokenize=True)` does, each token marked by where it came from.

`Conversation` is what a person gives (system / user / assistant turns, add-generation-prompt); `chat_prompt`
turns it into a `ChatPrompt`: the rendered text (engine/chat_template.py), its ids (the tokenizer's plain encode,
no special tokens added: transformers passes add_special_tokens=False), each token's provenance and each turn's
token span, and the notices (a doubled BOS). A ChatPrompt is hashable, so the run cache keys on it; the input
reader feeds its ids as they are (engine/live_inputs.py).

Provenance, from character offsets in the rendered text:
  "words"    the person's words (a message's content, found in order in the rendered text)
  "role"     a role's name written by the template ("user", "assistant", Gemma's "model")
  "special"  a special token (<|im_start|>, <|begin_of_text|>, [INST] when the tokenizer holds it as one)
  "template" any other text the template writes (newlines, "<|start_header_id|>" spelled as text, ...)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from attnlab.engine.chat_template import ChatTemplateError, render
from attnlab.engine.tokenizer import Tokenizer

ROLES = ("system", "user", "assistant")
PROVENANCES = ("template", "role", "words", "special")
ROLE_NAMES = {"assistant": ("assistant", "model"), "user": ("user",), "system": ("system",)}
SPECIAL_NAMES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")  # transformers' named special tokens


@dataclass(frozen=True)
class Conversation:
    """What a person writes: turns of (role, content), and whether to add the assistant's generation prompt."""

    messages: tuple[tuple[str, str], ...]
    add_generation_prompt: bool = True

    @classmethod
    def of(cls, messages: Iterable[Any], add_generation_prompt: bool = True) -> Conversation:
        """From a list of {"role", "content"} dicts (ChatTemplateError naming the bad one)."""
        turns = []
        for k, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                raise ChatTemplateError(f'message {k + 1} must be {{"role": "...", "content": "..."}} with text')
            turns.append((m["role"], m["content"]))
        if not turns:
            raise ChatTemplateError("the conversation has no message")
        return cls(tuple(turns), bool(add_generation_prompt))

    @classmethod
    def from_json(cls, data: Any) -> Conversation:
        """From what a conversation.json holds: a list of messages, or {"messages": [...],
        "add_generation_prompt": true/false} (default true)."""
        if isinstance(data, dict):
            add = data.get("add_generation_prompt", True)
            if not isinstance(add, bool):
                raise ChatTemplateError('"add_generation_prompt" must be true or false')
            return cls.of(_listed(data.get("messages")), add)
        return cls.of(_listed(data))

    def dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]


def _listed(value: Any) -> list:
    if not isinstance(value, list):
        raise ChatTemplateError('a conversation is a list of {"role": "...", "content": "..."} messages')
    return value


@dataclass(frozen=True)
class ChatPrompt:
    """A rendered, tokenized conversation: fed to the model as its ids, without more special tokens."""

    text: str
    ids: tuple[int, ...]
    provenance: tuple[str, ...]  # one of PROVENANCES per id
    turns: tuple[tuple[str, int, int], ...]  # (role, first token, last token + 1) of each message's words
    notices: tuple[str, ...] = field(default=())


def is_messages(value: Any) -> TypeGuard[list[dict] | Conversation]:
    """Whether `value` is a conversation: a Conversation, or a non-empty list of dicts (a list of ids is not)."""
    return isinstance(value, Conversation) or (
        isinstance(value, list) and bool(value) and all(isinstance(m, dict) for m in value)
    )


def special_tokens(tok: Tokenizer, metadata: dict[str, Any]) -> dict[str, str]:
    """The named special tokens the template sees ({"bos_token": "<s>", ...}): the folder's own strings
    (tokenizer_config.json, kept by the loader as metadata["chat_specials"]), else the tokenizer's ids'."""
    kept = metadata.get("chat_specials")
    if isinstance(kept, dict) and kept:
        return {str(k): str(v) for k, v in kept.items()}
    named = {name: getattr(tok.specials, name) for name in SPECIAL_NAMES}
    return {f"{name}_token": tok.id_to_token(i) for name, i in named.items() if i is not None}


def _offsets(tok: Tokenizer, text: str, n: int) -> list[tuple[int, int]] | None:
    """Each token's (start, end) in `text` where the tokenizer says (a tokenizers-library one); else None."""
    from attnlab.engine.tokenizer_bounds import safe_in_process

    hf = getattr(tok, "hf", None)
    if hf is None or not safe_in_process(hf, len(text)):  # one that may multiply text runs in a child only
        return None
    offsets = [tuple(o) for o in hf.encode(text, add_special_tokens=False).offsets]
    return [(int(a), int(b)) for a, b in offsets] if len(offsets) == n else None


def _added_special_ids(tok: Tokenizer) -> set[int]:
    """Ids of the tokens the tokenizer holds as special (its Specials, and a tokenizers library's added specials)."""
    ids = set(tok.specials.to_ids())
    hf = getattr(tok, "hf", None)
    if hf is not None and hasattr(hf, "get_added_tokens_decoder"):
        ids |= {int(i) for i, added in hf.get_added_tokens_decoder().items() if getattr(added, "special", False)}
    return ids


def _char_marks(text: str, conversation: Conversation) -> tuple[list[str], list[tuple[str, int, int]]]:
    """Each character's provenance ("words", "role" or "template") and each message's words' span in `text`."""
    marks = ["template"] * len(text)
    spans: list[tuple[str, int, int]] = []
    at = 0
    for role, content in conversation.messages:
        words = content.strip()
        start = text.find(words, at) if words else -1
        limit = start if start >= 0 else len(text)
        for name in ROLE_NAMES.get(role, (role,)):
            found = text.find(name, at, limit) if name else -1
            if found >= 0:
                marks[found : found + len(name)] = ["role"] * len(name)
                break
        if start >= 0:
            marks[start : start + len(words)] = ["words"] * len(words)
            spans.append((role, start, start + len(words)))
            at = start + len(words)
    if conversation.add_generation_prompt:  # the assistant's header after the last message
        for name in ROLE_NAMES["assistant"]:
            found = text.find(name, at)
            if found >= 0:
                marks[found : found + len(name)] = ["role"] * len(name)
                break
    return marks, spans


def _token_marks(
    marks: list[str], offsets: list[tuple[int, int]] | None, ids: list[int], specials: set[int]
) -> list[str]:
    out = []
    for k, i in enumerate(ids):
        if i in specials:
            out.append("special")
            continue
        if offsets is None:
            out.append("template")
            continue
        a, b = offsets[k]
        seen = set(marks[a:b])
        out.append("words" if "words" in seen else "role" if "role" in seen else "template")
    return out


def _turn_tokens(
    spans: list[tuple[str, int, int]], offsets: list[tuple[int, int]] | None
) -> tuple[tuple[str, int, int], ...]:
    if offsets is None:
        return ()
    turns = []
    for role, a, b in spans:
        inside = [k for k, (s, e) in enumerate(offsets) if s < b and e > a]
        if inside:
            turns.append((role, inside[0], inside[-1] + 1))
    return tuple(turns)


def doubled_bos(tok: Tokenizer, text: str, ids: list[int], bos_text: str | None) -> list[str]:
    """The banner's notice when BOS would come twice: the ids start with two, or the template writes it and
    the tokenizer adds its own to text encoded with special tokens (a pipeline that does both gets two)."""
    bos = tok.specials.bos
    if bos is None:
        return []
    name = tok.id_to_token(bos)
    if len(ids) > 1 and ids[0] == ids[1] == bos:
        return [
            f"Doubled BOS: the conversation starts with {name} twice (the template writes it, and so does a message)."
        ]
    adds = bos in tok.specials.prefix.get("decoder", [])
    if adds and bos_text and text.startswith(bos_text):
        return [
            f"Doubled BOS: the chat template already writes {name} and this tokenizer adds one to text it encodes; "
            "attnlab feeds the template's ids as apply_chat_template does (one), but encoding the rendered text "
            "with special tokens would start with two."
        ]
    return []


def chat_prompt(conversation: Conversation, template: str, tok: Tokenizer, metadata: dict[str, Any]) -> ChatPrompt:
    """`conversation` rendered by `template` and tokenized as apply_chat_template(tokenize=True) does."""
    named = special_tokens(tok, metadata)
    text = render(template, conversation.dicts(), conversation.add_generation_prompt, named)
    _pieces, ids = tok.encode(text)  # the plain encode: no special tokens added (add_special_tokens=False)
    offsets = _offsets(tok, text, len(ids))
    marks, spans = _char_marks(text, conversation)
    provenance = _token_marks(marks, offsets, list(ids), _added_special_ids(tok))
    notices = doubled_bos(tok, text, list(ids), named.get("bos_token"))
    return ChatPrompt(text, tuple(ids), tuple(provenance), _turn_tokens(spans, offsets), tuple(notices))


def chat_info(src: Any, tgt: Any) -> dict[str, Any]:
    """What a trace's info keeps of a conversation it ran: {"chat": {"side", "provenance", "turns"}} ({} for
    text). The tokens stage colours its chips by the provenance; attention panels mark the turns."""
    for side, prompt in (("src", src), ("tgt", tgt)):
        if isinstance(prompt, ChatPrompt):
            turns = [list(t) for t in prompt.turns]
            return {"chat": {"side": side, "provenance": list(prompt.provenance), "turns": turns}}
    return {}
