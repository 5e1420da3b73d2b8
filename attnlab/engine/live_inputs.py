"""What a LiveModel reads: text, a sentence pair or token ids turned into each side's token ids.

`InputReader` maps the (source, target) texts onto the stacks a model has, tokenizes them with the model's
tokenizers, wraps them in the tokenizer's special tokens, cuts them to the model's length and pads them. One of
the three seams of engine/live.py (the others: run reuse, live_reuse.py; placement, live_placement.py).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from attnlab.engine.chat_prompt import ChatPrompt, Conversation, chat_prompt, is_messages
from attnlab.engine.chat_template import ChatTemplateError
from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions
from attnlab.engine.pairs import INPUT_CUT, pair_separators, pair_side, split_pair
from attnlab.engine.tokenizer import Tokenizer
from attnlab.engine.tokenizer_bounds import cut_to_positions
from attnlab.engine.typed import classroom_language, typed_form
from attnlab.limits import MAX_SENTENCE_CHARS, excerpt

# text, a sentence pair, token ids fed back by generation, or a conversation (a list of {"role", "content"} dicts or
# a Conversation, rendered by the model's chat template into a ChatPrompt: engine/chat_prompt.py)
Prompt = str | tuple[str, str] | list[int] | list[dict] | Conversation | ChatPrompt | None
Side = tuple[list[str], list[int], int]  # (token strings, ids, real length before padding)


class InputError(ValueError):
    """Text or token ids this model cannot read; the message says which and why."""


def side_word(side: str) -> str:
    """How a message names a side: "source" or "decoder input"."""
    return "source" if side == "src" else "decoder input"


def checked_ids(ids: Iterable[Any], vocab_size: int, side: str) -> list[int]:
    """Token ids as ints, each a real token of the vocabulary (0 … vocab_size-1)."""
    what = side_word(side)
    out = []
    for value in ids:
        try:
            i = operator.index(value)  # int, numpy and 0-d torch integers; not floats or strings
        except TypeError:
            i = None
        if i is None or isinstance(value, bool):
            raise InputError(f"the {what} ids must be whole numbers; got {excerpt(value)}")
        if not 0 <= i < vocab_size:
            raise InputError(
                f"the {what} id {i} is not a token of this vocabulary (ids run from 0 to {vocab_size - 1})"
            )
        out.append(i)
    return out


def side_lengths(sides: dict[str, Side]) -> tuple[int, int]:
    """(S, T): the source and decoder-input lengths of a run's sides (0 for a side the model does not read)."""
    lengths = {side: len(ids) for side, (_p, ids, _n) in sides.items()}
    return lengths.get("src", 0), lengths.get("tgt", 0)


def read_text(text: str, notices: list[str], positions: int) -> str:
    """`text` cut to MAX_SENTENCE_CHARS (what the app's boxes hold too), then to what a model of `positions`
    positions can read (engine/tokenizer_bounds.py), before it is tokenized."""
    if len(text) > MAX_SENTENCE_CHARS:
        notices.append(f"The text has {len(text):,} characters; only the first {MAX_SENTENCE_CHARS:,} were read.")
    return cut_to_positions(text[:MAX_SENTENCE_CHARS], positions, notices)


class InputReader:
    """The text -> ids side of a LiveModel: its config, its tokenizers and what its metadata says about them."""

    def __init__(
        self,
        config: ModelConfig,
        src_tokenizer: Tokenizer | None,
        tgt_tokenizer: Tokenizer | None,
        metadata: dict[str, Any],
    ) -> None:
        self.config = config
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.metadata = metadata

    def prompt_sides(self, src: Prompt, tgt: Prompt) -> tuple[Prompt, Prompt]:
        """The (encoder input, decoder input) this architecture reads from a (source, target) pair.

        The one place that maps texts onto the stacks: encoder-decoder reads both as given; decoder-only has
        no encoder, and its prompt is `tgt`, or `src` when `tgt` is empty (a prompt typed in the source box);
        encoder-only has no decoder input: its second text, if any, is sentence B of a pair (`reads_pairs`)."""
        src, tgt = (self.chat(x) if is_messages(x) else x for x in (src, tgt))
        if not self.config.has_encoder:
            return None, (tgt if tgt else src)
        if not self.config.has_decoder:
            if self.reads_pairs and isinstance(src, str) and isinstance(tgt, str) and tgt.strip():
                return (src, tgt), None
            return src, None
        return src, tgt

    @property
    def chat_template(self) -> str | None:
        """The model's chat template (tokenizer_config.json, chat_template.jinja or a GGUF file's), if any."""
        template = self.metadata.get("chat_template")
        return template if isinstance(template, str) and template else None

    def chat(self, messages: list[dict] | Conversation) -> ChatPrompt:
        """A conversation rendered by the model's chat template and tokenized as apply_chat_template does
        (InputError in one line: no template, a bad message, a template that refuses or runs away)."""
        template, tok = self.chat_template, self.tgt_tokenizer or self.src_tokenizer
        if template is None or tok is None:
            raise InputError("this model has no chat template, so it reads text, not a conversation")
        try:
            conversation = messages if isinstance(messages, Conversation) else Conversation.of(messages)
            return chat_prompt(conversation, template, tok, self.metadata)
        except ChatTemplateError as e:
            raise InputError(str(e)) from None

    def role(self, side: str) -> str:
        """What a side's token sequence is to the model: "encoder", "encoder-only" or "decoder"."""
        if side == "src" and self.config.arch != "decoder-only":
            return "encoder-only" if self.config.arch == "encoder-only" else "encoder"
        return "decoder"

    def tokenizer(self, side: str) -> Tokenizer:
        """The tokenizer of "src" or "tgt" (a model built without one cannot read that side's text)."""
        tok = self.src_tokenizer if side == "src" else self.tgt_tokenizer
        if tok is None:
            raise ValueError(f"this model has no {'source' if side == 'src' else 'target'} tokenizer")
        return tok

    def typed_form(self, text: str, side: str) -> str:
        """What the model reads of `text` typed on `side`: for a classroom model the corpus form of the
        sentence (engine/typed.py: lower case, "dog." -> "dog .", "don't" -> "do not"); any other model reads
        `text` as it is."""
        language = classroom_language(self.metadata, "decoder" if self.role(side) == "decoder" else "encoder")
        return text if language is None else typed_form(text, language)

    @property
    def reads_pairs(self) -> bool:
        """Whether this model reads a sentence pair (an encoder-only model whose tokenizer has a pair template,
        BERT and RoBERTa; BERT's segments also get their own token-type embedding)."""
        tok = self.src_tokenizer
        return tok is not None and self.role("src") == "encoder-only" and tok.specials.reads_pairs

    def sentence_pair(self, text: Any) -> tuple[str, str] | None:
        """(A, B) when `text` is a sentence pair this model reads: a tuple of two strings, or one string with
        a separator between them: the model's own (BERT "A [SEP] B", RoBERTa/MPNet/XLM-R "A </s></s> B" or
        "A </s> B") or the generic "[SEP]" for any of them (engine/pairs.py); None for one sentence. Only
        models whose tokenizer has a pair template (Specials.pair) read pairs."""
        tok, reads = self.src_tokenizer, self.reads_pairs
        if isinstance(text, tuple) and len(text) == 2 and all(isinstance(t, str) for t in text):
            if not reads:
                raise InputError("this model reads one sentence at a time, not a pair of sentences")
            return text[0], text[1]
        if reads and tok is not None and isinstance(text, str):
            return split_pair(text, pair_separators(tok))
        return None

    def sides(
        self, src: Prompt, tgt: Prompt, options: RunOptions, notices: list[str], types: dict | None = None
    ) -> dict[str, Side]:
        """side -> (token strings, ids, real length) for each side this model reads (a sentence pair's token
        types go into `types`)."""
        sides = {}
        if self.config.has_encoder:
            sides["src"] = self.side(src, "src", options.pad_to, notices, types)
        if self.config.has_decoder:
            sides["tgt"] = self.side(tgt, "tgt", options.pad_to, notices)
        return sides

    def side(self, text: Prompt, side: str, pad_to: int, notices: list[str], types: dict | None = None) -> Side:
        """Token strings and ids of one side wrapped in the tokenizer's specials (engine/specials.py; attnlab's
        own: source = pieces + </s>, target = <s> + pieces).

        `text` is a string, a sentence pair (`sentence_pair`; its token types go into `types[side]`), or a
        list of token ids (what generation feeds back, so no text round trip)."""
        tok = self.tokenizer(side)
        if isinstance(text, ChatPrompt):  # the template's ids as they are: no special tokens added
            notices.extend(text.notices)
            ids = self._cut(list(text.ids), side, notices, room=self.config.max_len)
            n_real = len(ids)
            ids = ids + [tok.specials.pad_id] * max(0, pad_to - n_real)
            return [tok.id_to_token(i) for i in ids], ids, n_real
        pair = self.sentence_pair(text)
        if pair is not None:
            pieces, ids, n_real, type_ids = pair_side(tok, pair, self.config.max_len, pad_to, notices)
            if types is not None:
                types[side] = type_ids
            return pieces, ids, n_real
        if isinstance(text, (list, tuple)):
            ids = checked_ids(text, tok.vocab_size, side)
        elif text is None or isinstance(text, str):
            ids = tok.encode(self.typed_form(read_text(text or "", notices, self.config.max_len), side))[1]
        else:
            raise InputError(f"the {side_word(side)} must be text or a list of token ids, not {type(text).__name__}")
        ids = self._wrapped(self._cut(ids, side, notices), side, notices)
        n_real = len(ids)
        if pad_to > n_real:
            ids = ids + [tok.specials.pad_id] * (pad_to - n_real)
        return [tok.id_to_token(i) for i in ids], ids, n_real

    def _cut(self, ids: list[int], side: str, notices: list[str], room: int | None = None) -> list[int]:
        """`ids` cut to the room the model's length leaves beside its special tokens (a notice says so)."""
        n_specials = self.tokenizer(side).specials.n_added(self.role(side)) if room is None else 0
        room = self.config.max_len - n_specials if room is None else room
        if len(ids) <= room:
            return ids
        extra = f" (+{n_specials} special)" if n_specials else ""
        notices.append(
            f"The {side_word(side)} has {len(ids)} tokens but {INPUT_CUT} {room}{extra}; "
            f"the last {len(ids) - room} were dropped."
        )
        return ids[:room]

    def _wrapped(self, ids: list[int], side: str, notices: list[str]) -> list[int]:
        """`ids` in the tokenizer's special tokens; a start token when nothing else is left (InputError when
        not even that: nothing to run on)."""
        tok = self.tokenizer(side)
        specials = tok.specials
        ids = specials.wrap(self.role(side), ids)
        if not ids and specials.start_id is not None:  # a model without a forced <s> still needs one token
            ids = [specials.start_id]
            notices.append(f"The input is empty, so the model starts from {tok.id_to_token(ids[0])}.")
        if not ids:  # nothing to run on: no piece of the text, no special token, no start token
            how = (
                ": this model has no tokenizer, so type token ids as numbers, e.g. 12 7 40"
                if getattr(tok, "kind", "") == "numbers"
                else ""
            )
            raise InputError(f"the {side_word(side)} gives no token this model can read{how}")
        return ids

    def wrapping(self, side: str, text: Prompt = None) -> dict[str, list[str]]:
        """The special tokens this model's tokenizer puts around `side`'s text, as strings: {"before": [...],
        "after": [...]} (and "between" for a sentence pair: RoBERTa's </s></s>). What the tokenization stage
        says; a side without a tokenizer has none."""
        tok = self.src_tokenizer if side == "src" else self.tgt_tokenizer
        if tok is None:
            return {"before": [], "after": []}
        specials, role = tok.specials, self.role(side)
        if isinstance(text, ChatPrompt):  # a conversation's specials are the template's own
            return {"before": [], "after": []}
        if side == "src" and self.reads_pairs and self.sentence_pair(text) is not None:
            pair = specials.pair
            named = {part: [tok.id_to_token(i) for i in pair.get(part, [])] for part in ("prefix", "middle", "suffix")}
            return {"before": named["prefix"], "between": named["middle"], "after": named["suffix"]}
        return {
            "before": [tok.id_to_token(i) for i in specials.prefix.get(role, [])],
            "after": [tok.id_to_token(i) for i in specials.suffix.get(role, [])],
        }

    def generation_prompt(self, src: Prompt, prefix: str) -> tuple[Prompt, list[int]]:
        """(the encoder input, the decoder's prompt ids) greedy decoding starts from: a decoder-only model's
        prompt is `prefix`, or `src` when no prefix is given (`prompt_sides`)."""
        if not isinstance(prefix, str) or not (src is None or isinstance(src, str)):
            raise InputError("generate() takes text: src and prefix must be strings")
        tok = self.tokenizer("tgt")
        src, prompt = self.prompt_sides(src, prefix)
        if isinstance(prompt, list):
            return src, checked_ids(prompt, tok.vocab_size, "tgt")
        if isinstance(prompt, tuple):  # a decoder's prompt is never a pair (prompt_sides)
            raise InputError("generate() takes one prompt, not a pair of sentences")
        if not (prompt is None or isinstance(prompt, str)):  # src and prefix are text, so never a conversation
            raise InputError("generate() takes text, not a conversation")
        text = cut_to_positions((prompt or "")[:MAX_SENTENCE_CHARS], self.config.max_len, [])
        return src, list(tok.encode(self.typed_form(text, "tgt"))[1])
