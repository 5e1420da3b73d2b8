"""Look at a PyTorch .pt file BEFORE torch.load does: its zip directory (entry count, declared sizes: no zip
bombs) and the opcodes of its pickle stream (size, opcode count and nesting depth), without running or
building anything. torch.load's unpickler recurses on nesting and can crash the process on a deep enough
pickle; this scan is iterative and refuses such files first.
"""

from __future__ import annotations

import io
import pickletools
import zipfile
from pathlib import Path
from typing import IO

from attnlab import limits

_MARK = -1  # a MARK on the simulated stack
_MEMO_PUT = {"PUT", "BINPUT", "LONG_BINPUT"}
_MEMO_GET = {"GET", "BINGET", "LONG_BINGET"}
_IN_PLACE = {"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"}  # fill a container, not wrap it
LEGACY_PICKLES = 5  # the legacy format: magic number, protocol, sys info, the object, storage keys


def pickle_problem(stream: IO[bytes], what: str = "its pickle") -> str:
    """Why the pickle at the current position of `stream` is refused ('' when it is within the limits, or
    when it is malformed: torch.load reports damage itself). Reads up to its STOP opcode.

    The nesting depth is simulated on a stack of depths: an opcode that builds a value from others (TUPLE,
    REDUCE, …) makes it one deeper than the deepest of them; one that fills a container (APPEND, SETITEMS, …)
    leaves the container as deep as its deepest item plus one."""
    stack: list[int] = []
    memo: dict = {}
    ops = 0
    try:
        for op, arg, _pos in pickletools.genops(stream):
            ops += 1
            if ops > limits.MAX_PICKLE_OPS:
                return (
                    f"{what} has more than {limits.MAX_PICKLE_OPS:,} instructions; a checkpoint's pickle "
                    "only lists its tensors"
                )
            name = op.name
            if name == "MARK":
                stack.append(_MARK)
            elif name in _MEMO_PUT or name == "MEMOIZE":
                memo[arg if name != "MEMOIZE" else len(memo)] = stack[-1] if stack and stack[-1] > 0 else 1
            elif name in _MEMO_GET:
                stack.append(memo.get(arg, 1))
            elif name != "STOP":
                depth = _apply(op, stack)
                if depth > limits.MAX_PICKLE_DEPTH:
                    return (
                        f"{what} nests values more than {limits.MAX_PICKLE_DEPTH} levels deep; a checkpoint "
                        "is a few levels deep, and reading this one could crash the program"
                    )
            if stream.tell() > limits.MAX_PICKLE_BYTES:
                return (
                    f"{what} is larger than {limits.MAX_PICKLE_BYTES:,} bytes; a checkpoint's pickle only "
                    "lists its tensors"
                )
    except Exception:
        return ""
    return ""


def _apply(op: pickletools.OpcodeInfo, stack: list[int]) -> int:
    """Pop what `op` consumes, push what it produces; the depth of what it produced."""
    before = op.stack_before
    popped: list[int] = []
    if pickletools.markobject in before:
        while stack and stack[-1] != _MARK:
            popped.append(stack.pop())
        if stack:
            stack.pop()
        extra = before.index(pickletools.markobject)
    else:
        extra = len(before)
    for _ in range(extra):
        if stack and stack[-1] != _MARK:
            popped.append(stack.pop())
    if op.name in _IN_PLACE and popped:  # items go into a container already on the stack (popped last)
        container, items = popped[-1], popped[:-1]
        depth = max(container, 1 + max(items, default=0))
    else:
        depth = 1 + max(popped, default=0)
    stack.extend([depth] * len(op.stack_after))
    return depth


def zip_problem(path: Path) -> str:
    """Why the torch.save zip archive at `path` is refused before reading it ('' when it is not)."""
    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            if len(infos) > limits.MAX_ZIP_ENTRIES:
                return (
                    f"the archive holds {len(infos):,} entries; a checkpoint of at most {limits.MAX_TENSORS:,} "
                    "tensors needs far fewer"
                )
            declared = sum(i.file_size for i in infos)
            if declared > limits.MAX_UNPACK_RATIO * size + (1 << 20):
                return (
                    f"the archive declares {declared:,} bytes once unpacked from a file of {size:,} bytes "
                    "(a zip bomb); torch.save never compresses, so a real checkpoint unpacks to its own size"
                )
            pickles = [i for i in infos if i.filename.endswith("data.pkl")]
            if not pickles:
                return ""
            if pickles[0].file_size > limits.MAX_PICKLE_BYTES:
                return (
                    f"its pickle is {pickles[0].file_size:,} bytes; a checkpoint's pickle only lists its "
                    f"tensors (at most {limits.MAX_PICKLE_BYTES:,} bytes are read)"
                )
            data = archive.read(pickles[0])
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return ""  # damaged: torch.load reports it
    return pickle_problem(io.BytesIO(data))


def legacy_problem(path: Path) -> str:
    """The same checks for the legacy (non-zip) torch.save format: a few pickles in a row, then raw data."""
    with open(path, "rb") as f:
        for _ in range(LEGACY_PICKLES):
            start = f.tell()
            problem = pickle_problem(f)
            if problem or f.tell() == start or f.tell() - start > limits.MAX_PICKLE_BYTES:
                return problem
    return ""


def torch_file_problem(path: Path, is_zip: bool) -> str:
    """Why this .pt file is refused before torch.load reads it; '' when torch.load may try."""
    return zip_problem(path) if is_zip else legacy_problem(path)
