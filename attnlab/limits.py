"""What attnlab refuses, in one place: size caps checked BEFORE anything is allocated or parsed, short
excerpts for messages, and JSON parsing with a nesting limit. Plain Python (no torch, no Qt), so the engine,
the checkpoint readers, the CLI and the app all use the same numbers.

The caps are far above any model attnlab is for (the classroom models are ~1 M parameters, GPT-2 small is
124 M) and far below what would exhaust a laptop.
"""

from __future__ import annotations

import json
import re

# ---- model sizes (ModelConfig.problems) -------------------------------------------------------------------
MAX_VOCAB = 1_048_576  # tokens per vocabulary
MAX_D_MODEL = 16_384
MAX_D_FF = 262_144
MAX_LAYERS = 256  # per stack
MAX_HEADS = 1_024
MAX_LEN = 131_072  # positions
MAX_POSITION_TABLE = 1 << 25  # max_len x d_model cells of the sinusoid table built at load time (128 MB)
MAX_PARAMETERS = 2_000_000_000  # 8 GB of float32

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
EXCERPT_CHARS = 80  # how much of a value a message quotes
MAX_MESSAGE_ITEM_CHARS = 1_000  # one listed problem


class LimitError(ValueError):
    """An input over one of the caps above; the message names what and which cap."""


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
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
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: no per-character backtracking state
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """The deepest nesting of [ ] and { } in JSON text (strings skipped), without recursing."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads_bounded(text, what: str, max_chars: int, max_depth: int = MAX_JSON_DEPTH):
    """json.loads with caps on size and nesting; every failure is a ValueError (LimitError or
    json.JSONDecodeError) whose message starts with `what`."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise LimitError(f"{what} must be JSON text, not {type(text).__name__}")
    if len(text) > max_chars:
        raise LimitError(f"{what} is {len(text):,} characters long; attnlab reads at most {max_chars:,}")
    depth = json_depth(text)
    if depth > max_depth:
        raise LimitError(f"{what} nests {depth} levels deep; attnlab reads at most {max_depth}")
    try:
        return json.loads(text)
    except RecursionError as e:  # a safety net: the depth scan above should have refused it
        raise LimitError(f"{what} nests too deeply to read") from e
    except ValueError as e:
        raise ValueError(f"{what} is not valid JSON ({cut(str(e).splitlines()[0] if str(e) else e, 200)})") from e
