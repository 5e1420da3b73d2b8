"""Read and check a GGUF file's layout (llama.cpp's format, ggml docs/gguf.md) before any tensor is touched.

    magic "GGUF" · version u32 (2 or 3) · tensor count u64 · metadata count u64
    metadata: key (u64 length + UTF-8) · value type u32 · value (scalars; string = u64 length + bytes;
              array = element type u32 + u64 count + elements)
    tensor infos: name · n_dims u32 · dims u64 × n_dims (fastest first) · ggml type u32 · offset u64
    padding to general.alignment (32), then the tensor data, each tensor at its offset from there.

Every count, length and offset is checked against the bytes the file really has (and attnlab's caps) before
anything of that size is read or allocated: a truncated file, a lying count, a 2 GB string, an unknown type
id, huge dimensions or overlapping tensors are one line in `problems`, never an allocation, a crash or a hang.
gguf.GGUFReader trusts all of these (a 2 GB string claimed is read as the bytes that are there, a nested array is a
MemoryError, overlapping or misaligned tensors are read as they overlap, a big-endian file as no tensors at all),
so attnlab reads the header here and maps the tensors itself at the offsets checked here (gguf_file.py).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnlab import limits
from attnlab.checkpoints.errors import Problems

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # version 1 counted in 32 bits; llama.cpp has written 3 since 2023
MAX_KV = 100_000  # metadata entries (a real file has ~40)
MAX_STRING_BYTES = 16 << 20  # one metadata string (a chat template is ~10 KB)
MAX_ARRAY_ITEMS = 8_000_000  # one metadata array (a 262,144-token vocabulary with its merges and scores)
MAX_DIMS = 4  # GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32
# value type id -> (struct format, size) of the scalar types
SCALARS = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
NUMPY_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1", 10: "<u8", 11: "<i8"}
NUMPY_SCALARS[12] = "<f8"
STRING, ARRAY = 8, 9


class LayoutError(ValueError):
    """The file does not hold what it says (the message says what, in one line)."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the file describes it: `shape` in PyTorch's order (slowest first), `type_id` a ggml type,
    `start`/`nbytes` its data from the beginning of the file."""

    name: str
    shape: tuple[int, ...]
    type_id: int
    start: int
    nbytes: int

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class GgufLayout:
    version: int = 3
    metadata: dict[str, Any] = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)
    data_start: int = 0
    size: int = 0


def type_sizes() -> dict[int, tuple[str, int, int]]:
    """ggml type id -> (name, elements per block, bytes per block): the gguf package's own table."""
    from gguf.constants import GGML_QUANT_SIZES

    return {int(t): (t.name, block, size) for t, (block, size) in GGML_QUANT_SIZES.items()}


class _Cursor:
    """Bounded little-endian reads from the mapped file: every read checks the bytes are there first."""

    def __init__(self, buf: mmap.mmap, size: int):
        self.buf, self.size, self.pos = buf, size, 0

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise LayoutError(
                f"the file is truncated: {what} at byte {self.pos:,} needs {n:,} bytes, "
                f"but the file has only {max(self.size - self.pos, 0):,} left"
            )

    def scalar(self, fmt: str, n: int, what: str) -> Any:
        self.need(n, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return value

    def u32(self, what: str) -> int:
        return int(self.scalar("<I", 4, what))

    def u64(self, what: str) -> int:
        return int(self.scalar("<Q", 8, what))

    def string(self, what: str, cap: int = MAX_STRING_BYTES) -> str:
        n = self.u64(f"the length of {what}")
        if n > cap:
            raise LayoutError(f"{what} claims {n:,} bytes; attnlab reads strings of at most {cap:,} bytes here")
        self.need(n, what)
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def array(self, key: str) -> Any:
        item = self.u32(f"the element type of {key}")
        count = self.u64(f"the length of {key}")
        if count > MAX_ARRAY_ITEMS:
            raise LayoutError(f"metadata {key!r} claims {count:,} items; attnlab reads at most {MAX_ARRAY_ITEMS:,}")
        if item in SCALARS:
            n = count * SCALARS[item][1]
            self.need(n, f"the {count:,} items of {key}")
            values = np.frombuffer(self.buf, dtype=NUMPY_SCALARS[item], count=count, offset=self.pos).copy()
            self.pos += n
            return values.astype(bool) if item == 7 else values
        if item == STRING:
            self.need(count * 8, f"the {count:,} strings of {key}")  # each has at least its length
            return [self.string(f"item {i:,} of {key}") for i in range(count)]
        raise LayoutError(f"metadata {key!r} is an array of value type {item}, which GGUF does not define here")

    def value(self, key: str) -> Any:
        kind = self.u32(f"the value type of {key}")
        if kind in SCALARS:
            value = self.scalar(*SCALARS[kind], key)
            return bool(value) if kind == 7 else value
        if kind == STRING:
            return self.string(f"metadata {key!r}")
        if kind == ARRAY:
            return self.array(key)
        raise LayoutError(f"metadata {key!r} has value type {kind}, which GGUF does not define")


def _header(cur: _Cursor, size: int) -> tuple[int, int, int]:
    if cur.buf[:4] != MAGIC:
        raise LayoutError("this is not a GGUF file (it does not start with the bytes GGUF)")
    cur.pos = 4
    version = cur.u32("the version")
    if version & 0xFFFF == 0 and version:
        raise LayoutError("this GGUF file is big-endian; attnlab reads little-endian GGUF files")
    if version not in VERSIONS:
        raise LayoutError(f"this is GGUF version {version}; attnlab reads versions {', '.join(map(str, VERSIONS))}")
    n_tensors, n_kv = cur.u64("the tensor count"), cur.u64("the metadata count")
    if n_tensors > limits.MAX_TENSORS or n_tensors * 28 > size:  # a tensor info takes at least 28 bytes
        raise LayoutError(
            f"its header claims {n_tensors:,} tensors, which a file of {size:,} bytes cannot describe "
            f"(attnlab reads at most {limits.MAX_TENSORS:,})"
        )
    if n_kv > MAX_KV or n_kv * 13 > size:  # an entry takes at least 13 bytes
        raise LayoutError(
            f"its header claims {n_kv:,} metadata entries, which a file of {size:,} bytes cannot hold "
            f"(attnlab reads at most {MAX_KV:,})"
        )
    return version, n_tensors, n_kv


def _tensor_info(cur: _Cursor, sizes: dict[int, tuple[str, int, int]]) -> tuple[str, tuple[int, ...], int, int]:
    name = cur.string("a tensor name", limits.MAX_NAME_CHARS)
    n_dims = cur.u32(f"the dimension count of {name!r}")
    if not 1 <= n_dims <= MAX_DIMS:
        raise LayoutError(f"tensor {name!r} claims {n_dims:,} dimensions; GGUF tensors have 1 to {MAX_DIMS}")
    dims = [cur.u64(f"a dimension of {name!r}") for _ in range(n_dims)]
    type_id = cur.u32(f"the type of {name!r}")
    offset = cur.u64(f"the offset of {name!r}")
    if type_id not in sizes:
        raise LayoutError(f"tensor {name!r} has ggml type id {type_id}, which the gguf package does not know")
    numel = 1
    for d in dims:
        if not 1 <= d <= limits.MAX_PARAMETERS:
            raise LayoutError(f"tensor {name!r} has a dimension of {d:,}, which no model has")
        numel *= d
        if numel > limits.MAX_PARAMETERS:
            raise LayoutError(f"tensor {name!r} claims dimensions {dims} ({numel:,}+ values), far beyond any model")
    type_name, block, _ = sizes[type_id]
    if dims[0] % block:
        raise LayoutError(
            f"tensor {name!r}: rows of {dims[0]:,} values do not split into {type_name} blocks of {block}"
        )
    return name, tuple(reversed(dims)), type_id, offset


def _check_tensors(layout: GgufLayout, infos: list[tuple[str, tuple[int, ...], int, int]], alignment: int) -> None:
    sizes = type_sizes()
    data_size = layout.size - layout.data_start
    seen: set[str] = set()
    for name, shape, type_id, offset in infos:
        if name in seen:
            raise LayoutError(f"tensor {name!r} is described twice")
        seen.add(name)
        type_name, block, block_bytes = sizes[type_id]
        numel = 1
        for d in shape:
            numel *= d
        nbytes = numel // block * block_bytes
        if offset % alignment:
            raise LayoutError(
                f"tensor {name!r} starts at offset {offset:,}, not a multiple of the alignment {alignment}"
            )
        if offset + nbytes > data_size:
            raise LayoutError(
                f"the file is truncated: tensor {name!r} ({type_name}, {list(shape)}) needs bytes {offset:,} to "
                f"{offset + nbytes:,} of the data, which has only {data_size:,}"
            )
        layout.tensors.append(TensorInfo(name, shape, type_id, layout.data_start + offset, nbytes))
    ordered = sorted(layout.tensors, key=lambda t: t.start)
    for a, b in zip(ordered, ordered[1:], strict=False):
        if b.start < a.start + a.nbytes:
            raise LayoutError(f"tensors {a.name!r} and {b.name!r} overlap in the file (damaged, or crafted)")


def _alignment(metadata: dict[str, Any]) -> int:
    value = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value & (value - 1) or value > 1 << 20:
        raise LayoutError(f"general.alignment is {limits.excerpt(value)}, not a power of two")
    return int(value)


def parse(buf: mmap.mmap, size: int) -> GgufLayout:
    """The layout of the mapped file, or LayoutError saying the first thing wrong with it."""
    cur = _Cursor(buf, size)
    layout = GgufLayout(size=size)
    layout.version, n_tensors, n_kv = _header(cur, size)
    for _ in range(n_kv):
        key = cur.string("a metadata key", limits.MAX_NAME_CHARS)
        if key in layout.metadata:
            raise LayoutError(f"metadata {key!r} is given twice")
        layout.metadata[key] = cur.value(key)
    sizes = type_sizes()
    infos = [_tensor_info(cur, sizes) for _ in range(n_tensors)]
    alignment = _alignment(layout.metadata)
    layout.data_start = -(-cur.pos // alignment) * alignment
    if infos and layout.data_start > size:
        raise LayoutError("the file is truncated: it ends before its tensor data begins")
    _check_tensors(layout, infos, alignment)
    return layout


def read_gguf_layout(path: Path, problems: Problems) -> GgufLayout | None:
    """The checked layout of the GGUF file at `path`, or None with the reason added to `problems`."""
    try:
        size = path.stat().st_size
        if size < 24:
            problems.add(f"the GGUF file is truncated: it holds only {size} bytes (its header alone takes 24)")
            return None
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return parse(buf, size)
    except LayoutError as e:
        problems.add(str(e))
    except (OSError, ValueError) as e:
        problems.add(f"the GGUF file could not be read ({limits.cut(str(e) or type(e).__name__, 200)})")
    return None
