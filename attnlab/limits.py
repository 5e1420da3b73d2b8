"""What attnlab refuses, in one place: size caps checked BEFORE anything is allocated or parsed, short
excerpts for messages, and JSON parsing with a nesting limit. Plain Python and numpy (no torch, no Qt), so the engine,
the checkpoint readers, the CLI and the app all use the same numbers.

The caps are far above any model attnlab is for (the classroom models are ~1 M parameters, GPT-2 small is
124 M) and far below what would exhaust a laptop.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

# ---- model sizes (ModelConfig.problems) -------------------------------------------------------------------
MAX_VOCAB = 1_048_576  # tokens per vocabulary
MAX_D_MODEL = 16_384
MAX_D_FF = 262_144
MAX_LAYERS = 256  # per stack
MAX_HEADS = 1_024
MAX_LEN = 131_072  # positions
MAX_POSITION_TABLE = 1 << 25  # max_len x d_model cells of the sinusoid table built at load time (128 MB)
# a sanity cap against hostile configs only (2 TB of bf16): whether a model fits is the memory actually
# available, checked before anything is allocated (engine/memory.py, issue 23)
MAX_PARAMETERS = 1_000_000_000_000

# ---- files ------------------------------------------------------------------------------------------------
MAX_HEADER_BYTES = 100_000_000  # a safetensors JSON header (the safetensors library's own limit)
MAX_TENSORS = 10_000  # tensors in one checkpoint (GPT-2 has ~150)
MAX_JSON_DEPTH = 64  # nesting of any JSON attnlab parses (a config is 1 deep, a tokenizer ~5)
MAX_CONFIG_CHARS = 100_000  # a config is a few hundred characters
MAX_TOKENIZER_CHARS = 64_000_000  # a tokenizer's JSON (GPT-2's is 1.4 MB)
MAX_METADATA_CHARS = 1_000_000  # the free 'metadata' entry
MAX_NAME_CHARS = 1_000  # a tensor name
MAX_PICKLE_BYTES = 64_000_000  # the pickle stream of a .pt file (the tensors live beside it, not in it)
MAX_PICKLE_DEPTH = 64  # nesting of containers in that pickle (a state dict is ~4 deep)
MAX_PICKLE_OPS = 1_000_000  # opcodes in that pickle (a 10,000-tensor state dict has ~300,000)
MAX_ZIP_ENTRIES = MAX_TENSORS + 64
MAX_UNPACK_RATIO = 16  # a .pt archive may declare at most this many times its own size once unpacked

# ---- text -------------------------------------------------------------------------------------------------
MAX_SENTENCE_CHARS = 10_000  # what the sentence boxes accept and the app remembers (far over any max_len)
CHARS_PER_POSITION = 32  # a text is cut to max_len x this many characters before it is tokenized (tokens average ~4)
MAX_PIECES_PER_CHAR = 64  # a tokenizer making more pieces than this per character of its input is refused
IN_PROCESS_CHARS = 1_000_000  # a tokenizer whose normalizer may make more characters than this runs in a child
TOKENIZER_MEMORY_CAP = 2 << 30  # the address space of a tokenizer's child process (it starts in ~0.1 GB)
EXCERPT_CHARS = 80  # how much of a value a message quotes
MAX_MESSAGE_ITEM_CHARS = 1_000  # one listed problem


class LimitError(ValueError):
    """An input over one of the caps above; the message names what and which cap."""


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """repr(value), cut to `limit` characters plus '…' (never a 20 MB message)."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"… ({len(value):,} characters)"
    if isinstance(value, (list, tuple, dict, set)) and len(value) > 16:
        return f"<a {type(value).__name__} of {len(value):,} items>"
    try:
        text = repr(value)
    except Exception:
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def cut(text: str, limit: int = MAX_MESSAGE_ITEM_CHARS) -> str:
    """A message part kept readable: at most `limit` characters."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


def size_word(n: int) -> str:
    return f"{n:,}"


# ---- JSON -------------------------------------------------------------------------------------------------
MAX_JSON_ITEMS = 4_000_000  # values in one JSON text (a 128,000-token tokenizer with its merges: ~1 M)
# a string, or an unterminated one running to the end: every match consumes, so a scan never restarts at a
# quote it has passed (possessive quantifiers: no backtracking), and stripping strings is linear
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)', re.DOTALL)
_BRACKET_BYTES = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as signed bytes
_NOT_BRACKET_BYTES = bytes(c for c in range(256) if c not in b"[{]}")


def json_shape(text: str, max_depth: int = MAX_JSON_DEPTH, max_items: int = MAX_JSON_ITEMS) -> tuple[int, int]:
    """(nesting depth, an upper bound on the values) of JSON text, strings skipped: linear in the text, at C
    speed, never recursing. Returns early (with a count over the caps) when the quotes alone or a run of
    opening brackets already exceed them."""
    strings = text.count('"') // 2
    if strings > max_items:
        return 0, strings
    bare = _STRING.sub('""', text)  # strings hold no structure
    items = bare.count(",") + bare.count(":") + 1
    steps = bare.encode("utf-8", "surrogatepass").translate(_BRACKET_BYTES, _NOT_BRACKET_BYTES)
    if b"\x01" * (max_depth + 1) in steps:  # a run of openers is already too deep
        return max_depth + 1, items
    if not steps:
        return 0, items
    depth = int(np.frombuffer(steps, dtype=np.int8).cumsum(dtype=np.int64).max())  # the deepest prefix sum
    return max(depth, 0), items


def json_depth(text: str) -> int:
    """The deepest nesting of [ ] and { } in JSON text (strings skipped), in linear time (MAX_JSON_DEPTH + 1
    stands for anything deeper)."""
    return json_shape(text)[0]


def loads_bounded(
    text: str | bytes | bytearray,
    what: str,
    max_chars: int,
    max_depth: int = MAX_JSON_DEPTH,
    max_items: int = MAX_JSON_ITEMS,
) -> Any:
    """json.loads with caps on size, nesting and values, all checked BEFORE parsing; every failure is a
    ValueError (LimitError or json.JSONDecodeError) whose message starts with `what`."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_chars:
            raise LimitError(f"{what} is {len(text):,} bytes long; attnlab reads at most {max_chars:,}")
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise LimitError(f"{what} must be JSON text, not {type(text).__name__}")
    if len(text) > max_chars:
        raise LimitError(f"{what} is {len(text):,} characters long; attnlab reads at most {max_chars:,}")
    depth, items = json_shape(text, max_depth, max_items)
    if depth > max_depth:
        raise LimitError(f"{what} nests more than {max_depth} levels deep; attnlab reads at most {max_depth}")
    if items > max_items:
        raise LimitError(f"{what} holds about {items:,} values; attnlab reads at most {max_items:,}")
    try:
        return json.loads(text)
    except RecursionError as e:  # a safety net: the depth scan above should have refused it
        raise LimitError(f"{what} nests too deeply to read") from e
    except ValueError as e:
        first_line = (str(e).splitlines() or [""])[0]
        raise ValueError(f"{what} is not valid JSON ({cut(first_line, 200)})") from e


def gb(n: float) -> str:
    """Bytes as the refusals write them: "6.4 GB", "350 MB", "420 kB", "12 bytes" (never "0 MB" for a few
    hundred kilobytes; plain Python: the downloads and the app's first paint use it)."""
    if n >= 1e8:
        return f"{n / 1e9:.1f} GB"
    if n >= 999.5e3:  # what rounds to at least 1 MB
        return f"{n / 1e6:.0f} MB"
    if n >= 999.5:
        return f"{n / 1e3:.0f} kB"
    return f"{max(n, 0):.0f} bytes"
