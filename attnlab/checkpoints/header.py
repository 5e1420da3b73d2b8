"""Read and check a .safetensors file's layout before any tensor is touched.

The layout: 8 bytes (little-endian unsigned length N), N bytes of JSON header, then the raw tensor data.
The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets counted from
the start of the data) and may hold "__metadata__", a str -> str mapping.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import limits
from attnlab.checkpoints.errors import Problems

MAX_HEADER_BYTES = limits.MAX_HEADER_BYTES  # the safetensors library's own limit
GGUF_MAGIC = b"GGUF"  # the first four bytes of a GGUF file (llama.cpp; ggml docs/gguf.md)
DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}


@dataclass
class SafetensorsLayout:
    """What the header says. `complete` is False when the tensor data cannot be read (truncated, bad
    entries). `entries` maps tensor name -> {"dtype", "shape", "data_offsets"}."""

    entries: dict[str, dict] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    complete: bool = True


def _read_raw_header(path: Path, problems: Problems) -> tuple[bytes, int, int] | None:
    """(the header's JSON bytes, its length n, the file's size), or None (the reason added to `problems`) when
    the file does not start with a plausible header: too short, a header over the cap, not JSON, truncated."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                problems.add(
                    f"this is not a safetensors file: it holds only {size} bytes "
                    "(a safetensors file starts with an 8-byte header length)"
                )
                return None
            if prefix[:4] == GGUF_MAGIC:
                problems.add(
                    "this is a GGUF file (llama.cpp's format), not a safetensors file: open the GGUF file "
                    "by itself, not as part of a Hugging Face folder"
                )
                return None
            (n,) = struct.unpack("<Q", prefix)
            first = f.read(1)
            if first == b"{" and n > MAX_HEADER_BYTES:
                problems.add(
                    f"its header says it is {n:,} bytes long; attnlab reads headers of at most "
                    f"{MAX_HEADER_BYTES:,} bytes (the safetensors library's own limit)"
                )
                return None
            if first != b"{" or n < 2:
                problems.add(
                    "this is not a safetensors file: it does not start with a header length "
                    "followed by a JSON header (is it a PyTorch .pt file, or some other format?)"
                )
                return None
            if 8 + n > size:
                problems.add(
                    f"the file is truncated: its header alone should take {n} bytes, but the file "
                    f"has only {size - 8} bytes after the length field"
                )
                return None
            raw = first + f.read(n - 1)
    except OSError as e:
        problems.add(f"the file could not be read ({e.strerror or e})")
        return None
    return raw, n, size


def _parse_header(raw: bytes, problems: Problems) -> dict | None:
    """The header's JSON object, or None (the reason added to `problems`): too many tensors (counted before
    parsing, and again after), unreadable JSON, or a tensor name over the cap."""
    listed = raw.count(b'"data_offsets"')  # an upper bound on the tensors, counted before any parsing
    if listed > limits.MAX_TENSORS:
        problems.add(
            f"its header lists {listed:,} tensors; attnlab reads checkpoints of at most {limits.MAX_TENSORS:,} tensors"
        )
        return None
    try:
        header = limits.loads_bounded(raw.decode("utf-8"), "the header", MAX_HEADER_BYTES)
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except limits.LimitError as e:
        problems.add(f"refused to read it: {e}")
        return None
    except (UnicodeDecodeError, ValueError) as e:
        problems.add(f"the header is unreadable, so the file is damaged ({short_reason(e)})")
        return None
    n_tensors = len(header) - ("__metadata__" in header)
    if n_tensors > limits.MAX_TENSORS:
        problems.add(
            f"its header lists {n_tensors:,} tensors; attnlab reads checkpoints of at most "
            f"{limits.MAX_TENSORS:,} tensors"
        )
        return None
    long_names = [k for k in header if len(k) > limits.MAX_NAME_CHARS]
    if long_names:
        problems.add(
            f"its header has a tensor name of {len(long_names[0]):,} characters "
            f"({limits.excerpt(long_names[0])}); names are at most {limits.MAX_NAME_CHARS:,}"
        )
        return None
    return header


def read_layout(path: Path, problems: Problems) -> SafetensorsLayout | None:
    """The header of `path`, or None (with the reason added to `problems`) when there is none to read."""
    read = _read_raw_header(path, problems)
    if read is None:
        return None
    raw, n, size = read
    header = _parse_header(raw, problems)
    if header is None:
        return None
    layout = SafetensorsLayout()
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        problems.add("the header's __metadata__ is not a mapping of strings to strings")
        meta = {}
    layout.metadata = meta
    data_size = size - 8 - n
    need = 0
    for name, entry in header.items():
        reason = entry_problem(entry)
        if reason:
            problems.add(f"the header describes tensor {name!r} inconsistently ({reason})")
            layout.complete = False
            continue
        layout.entries[name] = entry
        need = max(need, entry["data_offsets"][1])
    if need > data_size:
        problems.add(
            f"the file is truncated: the tensors need {need} bytes of data after the header, "
            f"but only {data_size} are there"
        )
        layout.complete = False
    return layout


def entry_problem(entry: object) -> str:
    """Why one header entry cannot describe a tensor ('' when it can)."""
    if not isinstance(entry, dict):
        return "the entry is not an object"
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        return f"unknown dtype {limits.excerpt(dtype)}"
    if not isinstance(shape, list) or len(shape) > 8 or not all(isinstance(s, int) and s >= 0 for s in shape):
        return f"bad shape {limits.excerpt(shape)}"
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        return f"bad data offsets {limits.excerpt(offsets)}"
    expected = math.prod(shape) * DTYPE_BYTES[dtype]
    if offsets[1] - offsets[0] != expected:
        return f"shape {shape} of {dtype} needs {expected} bytes, the offsets give {offsets[1] - offsets[0]}"
    return ""


def short_reason(error: BaseException) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__
