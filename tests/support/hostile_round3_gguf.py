"""Issue 38's GGUF cases: a tiny valid Llama (tests/support/gguf_tiny.py, F32) read back with the gguf package's
GGUFReader and written again by its GGUFWriter with one thing changed (a setting of the wrong type, a head count of
zero, a NaN epsilon, a tensor of the wrong shape, a vocabulary that disagrees with the embeddings, …), or its bytes
patched afterwards where the writer would not write the lie (an offset past the end, dimensions whose product
overflows 64 bits, a 2 GB string inside an array). Each case in its own folder d/<name>/."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

from tests.support.hostile_round3 import LoadCase, fifo, relink

KEEP = object()


def rewrite(
    valid: Path,
    out: Path,
    kv: dict[str, Any] | None = None,
    tensors: dict[str, np.ndarray | None] | None = None,
) -> Path:
    """`valid` written again through GGUFWriter: metadata `kv` {key: (value, GGUFValueType[, sub type]) or None
    to drop}, `tensors` {name: array or None to drop} (F32 tensors only)."""
    kv, tensors = kv or {}, tensors or {}
    reader = GGUFReader(str(valid))
    arch = reader.fields["general.architecture"].contents()
    out.parent.mkdir(parents=True, exist_ok=True)
    w = GGUFWriter(str(out), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in kv:
            continue
        main = field.types[0]
        sub = field.types[-1] if main == GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), main, sub_type=sub)
    for key, given in kv.items():
        if given is not None:
            w.add_key_value(key, *given)
    for t in reader.tensors:
        data = tensors.get(t.name, KEEP)
        if data is None:
            continue
        w.add_tensor(t.name, np.array(t.data) if data is KEEP else data)
    for name, data in tensors.items():
        if data is not None and name not in {t.name for t in reader.tensors}:
            w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def tensor_field_at(path: Path, name: str, part: int) -> int:
    """The byte position in `path` of part `part` of tensor `name`'s info (0 name length, 1 name, 2 n_dims,
    3 dims, 4 ggml type, 5 offset)."""
    reader = GGUFReader(str(path))
    field = next(t.field for t in reader.tensors if t.name == name)
    return field.offset + sum(int(p.nbytes) for p in field.parts[:part])


def patched(src: Path, out: Path, at: int, raw: bytes) -> Path:
    data = bytearray(src.read_bytes())
    data[at : at + len(raw)] = raw
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(bytes(data))
    return out


def gguf_round3_cases(d: Path) -> dict[str, LoadCase]:
    from tests.support.gguf_tiny import write_gguf

    source = d / "gguf-valid-source"
    source.mkdir(parents=True, exist_ok=True)
    valid = write_gguf(source, "llama", "F32")
    assert isinstance(valid, Path)
    out: dict[str, LoadCase] = {}
    U32, I32, F32, STR, BOOL, ARR = (
        GGUFValueType.UINT32,
        GGUFValueType.INT32,
        GGUFValueType.FLOAT32,
        GGUFValueType.STRING,
        GGUFValueType.BOOL,
        GGUFValueType.ARRAY,
    )

    def case(name: str, path: Path, expect: str = "refused") -> None:
        out[name] = LoadCase(str(path), {}, d / name, expect)

    def kv(name: str, **changes: Any) -> None:
        case(name, rewrite(valid, d / name / "model.gguf", {k.replace("__", "."): v for k, v in changes.items()}))

    case("gguf-control", rewrite(valid, d / "gguf-control" / "model.gguf"), "loaded")
    kv("gguf-width-as-string", llama__embedding_length=("256", STR))
    kv("gguf-heads-zero", llama__attention__head_count=(0, U32))
    kv("gguf-heads-not-dividing", llama__attention__head_count=(5, U32))
    kv("gguf-heads-negative", llama__attention__head_count=(-4, I32))
    kv("gguf-kv-heads-more-than-heads", llama__attention__head_count_kv=(8, U32))
    kv("gguf-blocks-as-bool", llama__block_count=(True, BOOL))
    kv("gguf-blocks-more-than-tensors", llama__block_count=(9, U32))
    kv("gguf-eps-nan", llama__attention__layer_norm_rms_epsilon=(float("nan"), F32))
    kv("gguf-eps-negative", llama__attention__layer_norm_rms_epsilon=(-1.0, F32))
    kv("gguf-rope-base-infinite", llama__rope__freq_base=(float("inf"), F32))
    kv("gguf-rope-base-zero", llama__rope__freq_base=(0.0, F32))
    kv("gguf-context-zero", llama__context_length=(0, U32))
    kv("gguf-no-architecture-settings", llama__embedding_length=None, llama__block_count=None)
    kv("gguf-tokens-as-numbers", tokenizer__ggml__tokens=([1, 2, 3], ARR, GGUFValueType.UINT32))
    kv("gguf-tokens-fewer-than-rows", tokenizer__ggml__tokens=(["a", "b", "c"], ARR, STR))
    kv("gguf-bos-past-vocab", tokenizer__ggml__bos_token_id=(1 << 31, U32))  # ignored, as llama.cpp does
    out["gguf-bos-past-vocab"] = out["gguf-bos-past-vocab"]._replace(expect="loaded")
    kv("gguf-tokenizer-unknown", tokenizer__ggml__model=("no-such-model", STR))
    reader = GGUFReader(str(valid))
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    rows, width = np.array(embd.data).shape
    tensor_cases = {
        "gguf-embedding-wrong-width": {"token_embd.weight": np.zeros((rows, width - 1), np.float32)},
        "gguf-missing-tensor": {"blk.0.attn_q.weight": None},
        "gguf-extra-block-tensor": {"blk.9.attn_q.weight": np.zeros((width, width), np.float32)},
        "gguf-nan-weights": {"blk.0.attn_q.weight": np.full((width, width), np.nan, np.float32)},
        "gguf-norm-as-matrix": {"output_norm.weight": np.zeros((2, width), np.float32)},
    }
    for name, tensors in tensor_cases.items():
        case(name, rewrite(valid, d / name / "model.gguf", tensors=tensors))
    return out | patched_cases(d, valid, reader)


def patched_cases(d: Path, valid: Path, reader: GGUFReader) -> dict[str, LoadCase]:
    """The lies GGUFWriter would not write, patched into `valid`'s bytes, and files that are no files."""
    out: dict[str, LoadCase] = {}

    def case(name: str, path: Path, expect: str = "refused") -> None:
        out[name] = LoadCase(str(path), {}, d / name, expect)

    offset = tensor_field_at(valid, "output_norm.weight", 5)
    case(
        "gguf-offset-past-end",
        patched(valid, d / "gguf-offset-past-end" / "m.gguf", offset, struct.pack("<Q", 1 << 40)),
    )
    case(
        "gguf-offset-u64-max",
        patched(valid, d / "gguf-offset-u64-max" / "m.gguf", offset, struct.pack("<Q", 2**64 - 32)),
    )
    dims = tensor_field_at(valid, "token_embd.weight", 3)
    overflow = struct.pack("<QQ", 1 << 32, 1 << 32)
    case("gguf-dims-overflow-u64", patched(valid, d / "gguf-dims-overflow-u64" / "m.gguf", dims, overflow))
    kind = tensor_field_at(valid, "output_norm.weight", 4)
    case(
        "gguf-type-f64-on-f32-data",
        patched(valid, d / "gguf-type-f64-on-f32-data" / "m.gguf", kind, struct.pack("<I", 28)),
    )
    case("gguf-type-id-huge", patched(valid, d / "gguf-type-id-huge" / "m.gguf", kind, struct.pack("<I", 2**32 - 1)))
    tokens = reader.fields["tokenizer.ggml.tokens"]
    first = tokens.offset + sum(int(p.nbytes) for p in tokens.parts[: tokens.data[0] - 1])  # the 1st token's length
    case("gguf-2gb-token", patched(valid, d / "gguf-2gb-token" / "m.gguf", first, struct.pack("<Q", 2 << 30)))
    name_at = tensor_field_at(valid, "token_embd.weight", 1)
    case("gguf-tensor-name-not-utf8", patched(valid, d / "gguf-tensor-name-not-utf8" / "m.gguf", name_at, b"\xff\xfe"))
    folder = d / "gguf-fifo"
    folder.mkdir()
    case("gguf-fifo", fifo(folder / "model.gguf"))
    folder = d / "gguf-dev-zero"
    folder.mkdir()
    case("gguf-dev-zero", relink(folder / "model.gguf", "/dev/zero"))
    folder = d / "gguf-sparse-3gb"
    folder.mkdir()
    raw = valid.read_bytes()
    path = folder / "model.gguf"
    with open(path, "wb") as f:
        f.write(raw[:4096])
        f.truncate(3 << 30)  # the header's start, then a 3 GB hole
    case("gguf-sparse-3gb", path)
    return out
