"""How many pieces a Hugging Face tokenizer may make of a text, and whether it can be trusted to run in-process.

A legal tokenizer.json can multiply text: a `Replace` normalizer turning each "a" into ten million pieces (a
chain of them: a few hundred bytes of JSON) grew the CLI until it was killed (issue 38). The `tokenizers`
library's normalizers are the only step that makes text longer (pre-tokenizers split it, the models pick
pieces of it: at most one piece per byte), so an upper bound on how many characters a normalizer makes of one
is read from its JSON (`expansion_bound`): a tokenizer whose bound times the text's length stays under
IN_PROCESS_CHARS runs in-process (GPT-2, BERT, Llama, T5: 1 to 36); any other runs in the child process of
engine/tokenizer_process.py under a memory cap and a time limit. Either way a text that gives more than
MAX_PIECES_PER_CHAR pieces per character is refused in one line (`too_many_pieces`). A decoder can multiply
text the same way (a `Replace` decoder): decoding is refused where the decoder's bound times the tokens'
characters passes IN_PROCESS_CHARS (`too_long_decoded`).
"""

from __future__ import annotations

import base64
import functools
import json
import math
from collections.abc import Callable
from typing import Any

from attnlab.limits import CHARS_PER_POSITION, IN_PROCESS_CHARS, MAX_PIECES_PER_CHAR

# characters one character can become, at most: Unicode's longest decompositions (NFKD of U+FDFA is 18
# characters, a canonical one 4, a composition exclusion 3), the longest lower-case mapping (3 in Rust's
# char::to_lowercase), UTF-8 bytes as characters (4)
FIXED_BOUNDS = {
    "NFC": 3,
    "NFD": 4,
    "NFKC": 18,
    "NFKD": 18,
    "Lowercase": 3,
    "Strip": 1,
    "StripAccents": 1,
    "Nmt": 1,
    "ByteLevel": 4,
    "BertNormalizer": 36,  # CJK characters padded with spaces (3) x accents stripped via NFD (4) x lower case (3)
}


def cut_to_positions(text: str, positions: int, notices: list[str]) -> str:
    """`text` cut to `positions` x CHARS_PER_POSITION characters before it is tokenized (a notice says so): no
    model reads more than its max_len tokens, and a token of real text is far shorter (~4 characters)."""
    most = max(1, positions) * CHARS_PER_POSITION
    if len(text) <= most:
        return text
    notices.append(
        f"The text has {len(text):,} characters; only the first {most:,} ({CHARS_PER_POSITION} per position of "
        f"the model's {positions:,}) were tokenized."
    )
    return text[:most]


def most_pieces(n_chars: int) -> int:
    """The most pieces a tokenizer may make of a text of `n_chars` characters."""
    return MAX_PIECES_PER_CHAR * max(1, n_chars)


def too_many_pieces(made: int, n_chars: int, what: str = "pieces") -> str:
    """The one-line refusal of a tokenizer that made `made` pieces (or normalized characters: `what`) of a text
    of `n_chars` characters ("" when within the bound)."""
    if made <= most_pieces(n_chars):
        return ""
    how_many = f"{made:,}" if what == "pieces" else f"at least {made:,}"  # its normalizer was stopped part-way
    return (
        f"the tokenizer turns {n_chars:,} characters into {how_many} {what}, more than the {MAX_PIECES_PER_CHAR} "
        "per character attnlab accepts; this checkpoint's tokenizer multiplies text"
    )


def _charsmap_bound(blob: Any) -> float:
    """The longest replacement of a SentencePiece `Precompiled` charsmap: a 4-byte trie size, the trie, then the
    replacements as NUL-separated UTF-8 strings (one replacement per matched character or more)."""
    try:
        raw = base64.b64decode(blob) if isinstance(blob, str) else bytes(blob or b"")
    except (ValueError, TypeError):
        return math.inf
    if len(raw) < 4:
        return 1
    trie_bytes = int.from_bytes(raw[:4], "little")
    strings = raw[4 + trie_bytes :].split(b"\0")
    return max([1, *(len(s.decode("utf-8", "replace")) for s in strings)])


def _replace_bound(pattern: Any, content: Any) -> float:
    """A `Replace`: a string pattern of n characters becomes the content (len(content) / n per character); a
    regex's match may be empty, so each character may gain the whole content (len(content) + 1)."""
    if not isinstance(content, str):
        return math.inf
    literal = pattern.get("String") if isinstance(pattern, dict) else None
    if isinstance(literal, str) and literal:
        return max(1, len(content) / len(literal))
    return len(content) + 1


def expansion_bound(normalizer: Any) -> float:
    """At most how many characters the normalizer (its JSON as a dict, None for none) makes of one character;
    math.inf for one this does not know."""
    if normalizer is None:
        return 1
    if not isinstance(normalizer, dict):
        return math.inf
    kind = normalizer.get("type")
    if kind in FIXED_BOUNDS:
        return FIXED_BOUNDS[kind]
    if kind == "Sequence":
        parts = normalizer.get("normalizers")
        return math.prod(expansion_bound(n) for n in parts) if isinstance(parts, list) else math.inf
    if kind == "Replace":
        return _replace_bound(normalizer.get("pattern"), normalizer.get("content"))
    if kind == "Prepend":
        prepend = normalizer.get("prepend")
        return len(prepend) + 1 if isinstance(prepend, str) else math.inf
    if kind == "Precompiled":
        return _charsmap_bound(normalizer.get("precompiled_charsmap"))
    return math.inf


# a decoder's steps: bytes back to characters (ByteLevel, ByteFallback: fewer), a space per token at most
# (WordPiece, Metaspace, BPEDecoder, CTC: 2)
DECODER_BOUNDS = {"ByteLevel": 1, "ByteFallback": 1, "Fuse": 1, "Strip": 1}
DECODER_BOUNDS |= {"WordPiece": 2, "Metaspace": 2, "BPEDecoder": 2, "CTC": 2}


def decoder_expansion_bound(decoder: Any) -> float:
    """At most how many characters the decoder (its JSON as a dict, None for none) makes of one character of
    the tokens it joins; math.inf for one this does not know."""
    if decoder is None:
        return 1
    if not isinstance(decoder, dict):
        return math.inf
    kind = decoder.get("type")
    if kind in DECODER_BOUNDS:
        return DECODER_BOUNDS[kind]
    if kind == "Sequence":
        parts = decoder.get("decoders")
        return math.prod(decoder_expansion_bound(d) for d in parts) if isinstance(parts, list) else math.inf
    if kind == "Replace":
        return _replace_bound(decoder.get("pattern"), decoder.get("content"))
    return math.inf


def _bound_of(part: Any, reader: Callable[[Any], float]) -> float:
    """reader(the JSON of a tokenizer's normalizer or decoder); 1 for none, math.inf for one unreadable."""
    if part is None:
        return 1
    try:
        return _read_bound(bytes(part.__getstate__()), reader)
    except (ValueError, TypeError, AttributeError):
        return math.inf


@functools.lru_cache(maxsize=64)
def _read_bound(state: bytes, reader: Callable[[Any], float]) -> float:
    """The bound of one serialized part, parsed once (a T5 charsmap is ~250 kB of JSON; every encode asks)."""
    return float(reader(json.loads(state)))


def too_long_decoded(hf: Any, n_chars: int) -> str:
    """The one-line refusal of decoding tokens of `n_chars` characters with a decoder that could make more than
    IN_PROCESS_CHARS characters of them ("" when it cannot)."""
    bound = _bound_of(getattr(hf, "decoder", None), decoder_expansion_bound)
    if bound * max(1, n_chars) <= IN_PROCESS_CHARS:
        return ""
    return (
        f"the tokenizer's decoder could turn these {n_chars:,} characters into more than {IN_PROCESS_CHARS:,}; "
        "this checkpoint's tokenizer multiplies text"
    )


def normalizer_bound(hf: Any) -> float:
    """expansion_bound of a tokenizers.Tokenizer's normalizer (read from its own JSON)."""
    return _bound_of(getattr(hf, "normalizer", None), expansion_bound)


def safe_in_process(hf: Any, n_chars: int) -> bool:
    """Whether the tokenizer can only make a bounded, small amount of text of `n_chars` characters."""
    return normalizer_bound(hf) * max(1, n_chars) <= IN_PROCESS_CHARS
