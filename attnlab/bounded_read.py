"""The one way attnlab reads a structured file it did not write itself (config.json, shard indexes, tokenizer
files, vocabularies, meta.pkl, lessons): regular files only, the size checked from stat BEFORE anything is
read (and again while reading), JSON and TOML parsed with caps on nesting and values, and every path a
checkpoint folder names kept inside that folder. Every refusal is a FileRefused (a ValueError) of one line
that names the file. Plain Python (no torch, no Qt).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from attnlab import limits

CHUNK = 1 << 20  # bytes read at a time (the cap is re-checked after each)
MAX_SMALL_JSON_BYTES = 4_000_000  # config.json, tokenizer_config.json, special_tokens_map.json
MAX_INDEX_BYTES = 16_000_000  # a shard index (a 10,000-tensor model's is ~1 MB)
MAX_VOCAB_BYTES = 64_000_000  # vocab.json / vocab.txt / merges.txt / a SentencePiece model
MAX_LESSON_DEPTH = 16  # a lesson is at most 3 deep ([[step]] with a toggles table)


class FileRefused(ValueError):
    """A file attnlab will not read: not a regular file, over a cap, outside its folder, or not parseable."""


def _name(path: Path) -> str:
    return limits.cut(str(path), 300)


KINDS = {  # what a path is when it is not a regular file, in words
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def not_a_file(path: str | os.PathLike[str], mode: int) -> str:
    """Why `path` (whose stat, links followed, gave `mode`) is not a file, in words: "is a FIFO (named pipe)",
    "links to a device (/dev/zero)"; the name of what was asked for comes before it."""
    kind = KINDS.get(stat.S_IFMT(mode), "not a regular file")
    if os.path.islink(path):
        try:
            target = limits.cut(os.path.realpath(path), 200)
        except (OSError, RuntimeError):  # a loop
            target = "?"
        return f"links to {kind} ({target})"
    return f"is {kind}"


def regular_file_size(path: str | os.PathLike[str], what: str, max_bytes: int) -> int:
    """The size of the regular file at `path` (symlinks followed), checked from stat without opening it:
    a folder, a FIFO, a device or a socket is refused, and so is a file over `max_bytes` (a sparse 3 GB file
    costs nothing to refuse)."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FileRefused(f"{what} {_name(path)!r}: there is no file at that path") from None
    except OSError as e:
        raise FileRefused(f"{what} {_name(path)!r} cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(f"{what} {_name(path)!r} {not_a_file(path, info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        raise FileRefused(f"{what} {_name(path)!r} is {info.st_size:,} bytes; attnlab reads at most {max_bytes:,}")
    return info.st_size


def read_bytes(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The whole content of a regular file of at most `max_bytes` (see regular_file_size). Opened without
    blocking (a FIFO swapped in after the check cannot hang the read) and re-checked as it is read."""
    path = Path(path)
    regular_file_size(path, what, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise FileRefused(f"{what} {_name(path)!r} cannot be read ({e.strerror or e})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the stat and the open
            raise FileRefused(f"{what} {_name(path)!r} is not a regular file")
        parts, total = [], 0
        while chunk := os.read(fd, CHUNK):
            total += len(chunk)
            if total > max_bytes:  # it grew after the stat
                raise FileRefused(f"{what} {_name(path)!r} is larger than {max_bytes:,} bytes; attnlab reads no more")
            parts.append(chunk)
    except OSError as e:
        raise FileRefused(f"{what} {_name(path)!r} cannot be read ({e.strerror or e})") from None
    except MemoryError:
        raise FileRefused(f"{what} {_name(path)!r} needs more memory to read than is available") from None
    finally:
        os.close(fd)
    return b"".join(parts)


def read_text(path: str | os.PathLike[str], what: str, max_bytes: int) -> str:
    """read_bytes decoded as UTF-8 (a file that is not UTF-8 is refused, naming it)."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileRefused(f"{what} {_name(Path(path))!r} is not UTF-8 text (byte {e.start:,})") from None


def read_json(
    path: str | os.PathLike[str],
    what: str,
    max_bytes: int,
    max_depth: int = limits.MAX_JSON_DEPTH,
    max_items: int = limits.MAX_JSON_ITEMS,
) -> Any:
    """The JSON value in a regular file, with size, nesting and value count checked before parsing."""
    text = read_text(path, what, max_bytes)
    try:
        return limits.loads_bounded(text, f"{what} {_name(Path(path))!r}", max_bytes, max_depth, max_items)
    except ValueError as e:
        raise FileRefused(str(e)) from None


def loads_toml(text: str, what: str, max_depth: int = MAX_LESSON_DEPTH) -> dict:
    """tomllib.loads, its nesting bounded: tomllib recurses per level of inline arrays and tables, so a deep
    one is refused from a bracket count before parsing (and a RecursionError never escapes)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser from PyPI (a dependency there)
        import tomli as tomllib

    if _toml_depth_bound(text) > max_depth:
        raise FileRefused(f"{what} nests more than {max_depth} levels deep; attnlab reads at most {max_depth}")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FileRefused(f"{what} is not valid TOML ({limits.cut(str(e), 200)})") from None
    except RecursionError:
        raise FileRefused(f"{what} nests too deeply to read") from None
    except ValueError as e:  # a whole number past Python's 4,300 digits (int conversion's limit)
        raise FileRefused(f"{what} is not valid TOML ({limits.cut(str(e), 120)})") from None


def _toml_depth_bound(text: str) -> int:
    """An upper bound on the nesting of TOML's inline arrays and tables: the deepest running count of
    brackets, quotes ignored (a bracket inside a string only ever raises the bound, never hides depth)."""
    return limits.json_shape(text.replace('"', " ").replace("'", " "))[0]


def confined(folder: str | os.PathLike[str], name: str, what: str) -> Path:
    """`folder / name` when it stays inside `folder`: no absolute path, no '..', and no symlink (of the file
    or of a folder on the way) that resolves outside, except into the same Hugging Face cache repository's
    `blobs/` when `folder` is one of its snapshots (`cache_blobs`). Refused with one line otherwise, before it
    is opened."""
    folder = Path(folder)
    text = str(name)
    relative = Path(text)
    if not text or "\0" in text or relative.is_absolute() or relative.anchor or ".." in relative.parts:
        raise FileRefused(
            f"{what} {limits.excerpt(text)} points outside the model folder; attnlab reads only files inside it"
        )
    target = folder / relative
    try:
        resolved, root = target.resolve(), folder.resolve()
        inside = resolved.is_relative_to(root) or _in_cache_blobs(target, resolved, root)
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside:
        raise FileRefused(
            f"{what} {limits.excerpt(text)} is a link to a file outside the model folder (and outside its cached "
            "repository's blobs/); attnlab reads only files inside them"
        )
    return target


# ---- the Hugging Face cache: models--org--name/{blobs/<hash>, snapshots/<commit>/file -> ../../blobs/<hash>}
def cache_blobs(folder: Path) -> Path | None:
    """`<repo>/blobs` when the resolved `folder` is (or lies inside) a snapshot of a Hugging Face cache
    repository, `<cache>/models--org--name/snapshots/<revision>/…`, whose blobs/ is a real folder (not a link
    that could lead anywhere); None otherwise."""
    for part in (folder, *folder.parents):
        repo = part.parent.parent
        if part.parent.name == "snapshots" and repo.name.startswith("models--") and len(repo.name) > 8:
            blobs = repo / "blobs"
            return blobs if blobs.is_dir() and not blobs.is_symlink() else None
    return None


def _in_cache_blobs(target: Path, resolved: Path, root: Path) -> bool:
    """Whether `target` (in the snapshot folder `root`, resolved: `resolved`) is a cached file: its link leads
    into the same repository's blobs/, or through a blob there into huggingface_hub's cache-wide shared store
    (`<cache>/blobs/<2 hex>/<xet hash>`, a blob being a link to it, as huggingface_hub itself checks it)."""
    blobs = cache_blobs(root)
    if blobs is None:
        return False
    if resolved.is_relative_to(blobs):
        return True
    first = _first_hop(target)  # the repo blob the snapshot's link names (huggingface_hub's first hop)
    if first is None or first.parent != blobs:
        return False
    try:
        from huggingface_hub.utils import _shared_blobs  # huggingface_hub >= 2.4; earlier ones have no store
    except ImportError:
        return False
    cache = blobs.parent.parent
    store = _shared_blobs.shared_blobs_dir(cache)
    if store.is_symlink() or not _shared_blobs.is_shared_blobs_dir(store):  # a real folder, marked as the store
        return False
    shared = _shared_blobs.shared_blob_target(first, cache)
    return shared is not None and resolved.is_relative_to(store) and shared.resolve() == resolved


def _first_hop(target: Path) -> Path | None:
    """Where the link `target` points, one hop, its folder resolved (None when it is no link)."""
    if not target.is_symlink():
        return None
    return Path(os.path.normpath(target.parent.resolve() / os.readlink(target)))
