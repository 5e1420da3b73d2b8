"""Hostile GGUF files (issue 36), each a few hundred bytes written here byte by byte as ggml's docs/gguf.md lays the
format out (little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count, the metadata (u64-length
key, u32 value type, value), the tensor infos (name, u32 n_dims, u64 dims, u32 ggml type, u64 offset), padding
to 32, the data. Each lies about one thing. Used by test_hostile_gguf.py and benchmarks/hostile_surfaces_bench.py.
"""

from __future__ import annotations

import struct
from pathlib import Path

U32, STRING, ARRAY = 4, 8, 9
F32, Q4_0 = 0, 2


def gstr(text: str | bytes, claimed: int | None = None) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw) if claimed is None else claimed) + raw


def kv_str(key: str, value: str, claimed: int | None = None) -> bytes:
    return gstr(key) + struct.pack("<I", STRING) + gstr(value, claimed)


def kv_u32(key: str, value: int) -> bytes:
    return gstr(key) + struct.pack("<II", U32, value)


def tensor_info(name: str, dims: list[int], ggml_type: int = F32, offset: int = 0, n_dims: int | None = None) -> bytes:
    n = len(dims) if n_dims is None else n_dims
    return (
        gstr(name)
        + struct.pack("<I", n)
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", ggml_type, offset)
    )


def llama_kv(**sizes: int) -> list[bytes]:
    """A Llama's metadata: these sizes (block_count, embedding_length, …) over tiny ones."""
    given = {"block_count": 1, "embedding_length": 32, "feed_forward_length": 32, "attention.head_count": 4}
    given.update({k.replace("__", "."): v for k, v in sizes.items()})
    return [kv_str("general.architecture", "llama"), *(kv_u32(f"llama.{k}", v) for k, v in given.items())]


LLAMA_KV = llama_kv()


def gguf_bytes(
    kvs: list[bytes],
    tensors: list[bytes],
    data: bytes = b"",
    *,
    n_tensors: int | None = None,
    n_kv: int | None = None,
    version: int = 3,
) -> bytes:
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors, len(kvs))
    if n_kv is not None:
        head = head[:-8] + struct.pack("<Q", n_kv)
    body = head + b"".join(kvs) + b"".join(tensors)
    return body + b"\0" * (-len(body) % 32) + data


def write(path: Path, raw: bytes) -> Path:
    path.write_bytes(raw)
    return path


def gguf_cases(d: Path, valid: Path | None = None) -> dict[str, Path]:
    """name -> a GGUF file that must be refused in one line, quickly, without allocating. `valid`: a real tiny
    GGUF (gguf_tiny.write_gguf) to truncate."""
    one = [tensor_info("token_embd.weight", [32, 8])]
    cases = {
        "gguf-empty-header": write(d / "empty.gguf", b"GGUF\x03\0\0\0"),
        "gguf-version-1": write(d / "v1.gguf", gguf_bytes([], [], version=1)),
        "gguf-big-endian": write(d / "be.gguf", b"GGUF" + struct.pack(">IQQ", 3, 0, 0)),
        "gguf-lying-tensor-count": write(d / "count.gguf", gguf_bytes(LLAMA_KV, one, n_tensors=10**12)),
        "gguf-lying-kv-count": write(d / "kvcount.gguf", gguf_bytes(LLAMA_KV, one, n_kv=1 << 40)),
        "gguf-2gb-string": write(d / "string.gguf", gguf_bytes([kv_str("general.name", "x", claimed=2 << 30)], [])),
        "gguf-2gb-key": write(d / "key.gguf", gguf_bytes([gstr("k", claimed=2 << 30)], [])),
        "gguf-huge-array": write(
            d / "array.gguf",
            gguf_bytes([gstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", ARRAY, STRING, 1 << 40)], []),
        ),
        "gguf-nested-array": write(
            d / "nested.gguf", gguf_bytes([gstr("x") + struct.pack("<IIQ", ARRAY, ARRAY, 1) * 5000], [])
        ),
        "gguf-unknown-value-type": write(d / "vtype.gguf", gguf_bytes([gstr("x") + struct.pack("<I", 77)], [])),
        "gguf-unknown-ggml-type": write(d / "gtype.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [32], 999)])),
        "gguf-huge-dims": write(d / "dims.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [1 << 30, 1 << 30])])),
        "gguf-many-dims": write(d / "ndims.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [1] * 4, n_dims=1 << 30)])),
        "gguf-zero-dim": write(d / "zero.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [32, 0])])),
        "gguf-data-missing": write(d / "missing.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [1 << 20, 1 << 10])])),
        "gguf-overlapping": write(
            d / "overlap.gguf",
            gguf_bytes(LLAMA_KV, [tensor_info("a", [32, 4]), tensor_info("b", [32, 4], offset=256)], b"\0" * 1024),
        ),
        "gguf-misaligned": write(d / "align.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [8], offset=4)], b"\0" * 64)),
        "gguf-odd-alignment": write(
            d / "align3.gguf", gguf_bytes([*LLAMA_KV, kv_u32("general.alignment", 3)], [], b"\0" * 64)
        ),
        "gguf-duplicate-tensor": write(
            d / "dup.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [8]), tensor_info("a", [8], offset=32)], b"\0" * 64)
        ),
        "gguf-partial-block": write(
            d / "block.gguf", gguf_bytes(LLAMA_KV, [tensor_info("a", [33, 2], Q4_0)], b"\0" * 64)
        ),
        "gguf-long-name": write(d / "name.gguf", gguf_bytes(LLAMA_KV, [gstr("a", claimed=1 << 60)])),
        "gguf-unknown-architecture": write(
            d / "arch.gguf", gguf_bytes([kv_str("general.architecture", "mamba")], one, b"\0" * 1024)
        ),
        "gguf-huge-config": write(
            d / "config.gguf",
            gguf_bytes(llama_kv(embedding_length=1 << 31, block_count=1 << 20, vocab_size=32), one, b"\0" * 1024),
        ),
    }
    cases["gguf-odd-rope-freqs"] = write(  # rope factors no Llama 3 setting gives: 1, 2, 3, 4
        d / "rope.gguf",
        gguf_bytes(llama_kv(vocab_size=32), [tensor_info("rope_freqs.weight", [4])], struct.pack("<4f", 1, 2, 3, 4)),
    )
    if valid is not None:
        raw = valid.read_bytes()
        cases["gguf-truncated"] = write(d / "truncated.gguf", raw[: len(raw) // 2])
        cases["gguf-truncated-header"] = write(d / "truncated-header.gguf", raw[:300])
    return cases
