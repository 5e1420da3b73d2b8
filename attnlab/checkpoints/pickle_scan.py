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

_MARK = -1  # a MARK on the simulated stack (values are ids >= 0)
_MEMO_PUT = {"PUT", "BINPUT", "LONG_BINPUT"}
_MEMO_GET = {"GET", "BINGET", "LONG_BINGET"}
_IN_PLACE = {"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"}  # fill a container, not wrap it
LEGACY_PICKLES = 5  # the legacy format: magic number, protocol, sys info, the object, storage keys
MAX_MEMO = limits.MAX_PICKLE_OPS  # memo slots: the pickler numbers them 0, 1, 2, … one per stored value


class PickleRefused(Exception):
    """Raised inside the scan with the reason; pickle_problem turns it into its answer."""


class _Graph:
    """The values a pickle builds, as the unpickler will hold them: each a number on a simulated stack, its
    nesting depth, and (for values reachable again through the memo) the containers holding it, so that
    filling a stored container later deepens everything it already sits in."""

    def __init__(self, what: str):
        self.what = what
        self.depth: list[int] = []  # value id -> nesting depth (a scalar is 1, [x] is 2, …)
        self.parents: dict[int, list[int]] = {}  # for values the memo can reach again (and their holders)
        self.stack: list[int] = []
        self.memo: dict[int, int] = {}

    def new(self, items: list[int]) -> int:
        vid = len(self.depth)
        self.depth.append(1 + max((self.depth[i] for i in items), default=0))
        self._hold(vid, items)
        return vid

    def fill(self, container: int, items: list[int]) -> None:
        deeper = 1 + max((self.depth[i] for i in items), default=0)
        self._hold(container, items)
        if deeper > self.depth[container]:
            self._deepen(container, deeper)

    def _hold(self, holder: int, items: list[int]) -> None:
        for item in items:
            if item in self.parents:  # reachable again: remember who holds it
                self.parents[item].append(holder)
                self.parents.setdefault(holder, [])
        self._check(self.depth[holder])

    def _deepen(self, vid: int, depth: int) -> None:
        """`vid` is now `depth` deep: raise every container holding it (each rise is bounded by the cap)."""
        work = [(vid, depth)]
        while work:
            vid, depth = work.pop()
            if depth <= self.depth[vid]:
                continue
            self.depth[vid] = depth
            self._check(depth)
            work.extend((p, depth + 1) for p in self.parents.get(vid, ()))

    def remember(self, key: int, vid: int) -> None:
        if key > MAX_MEMO or len(self.memo) >= MAX_MEMO:
            raise PickleRefused(f"{self.what} stores values under memo slot {key:,}; a checkpoint needs far fewer")
        self.memo[key] = vid
        self.parents.setdefault(vid, [])

    def recall(self, key: int) -> int:
        if key not in self.memo:
            raise PickleRefused(f"{self.what} reads memo slot {key:,}, which it never stored (the file is damaged)")
        return self.memo[key]

    def _check(self, depth: int) -> None:
        if depth > limits.MAX_PICKLE_DEPTH:
            raise PickleRefused(
                f"{self.what} nests values more than {limits.MAX_PICKLE_DEPTH} levels deep; a checkpoint "
                "is a few levels deep, and reading this one could crash the program"
            )


def pickle_problem(stream: IO[bytes], what: str = "its pickle") -> str:
    """Why the pickle at the current position of `stream` is refused ('' when it is within the limits, or
    when it is malformed: the unpickler reports damage itself). Reads up to its STOP opcode.

    The nesting depth is measured on the values the unpickler will build (see _Graph): an opcode that builds
    a value from others (TUPLE, REDUCE, …) makes it one deeper than the deepest of them; one that fills a
    container (APPEND, SETITEMS, BUILD, …) deepens the container, and every container already holding it."""
    graph = _Graph(what)
    start = stream.tell()
    try:
        for ops, (op, arg, _pos) in enumerate(pickletools.genops(stream), 1):
            if ops > limits.MAX_PICKLE_OPS:
                raise PickleRefused(
                    f"{what} has more than {limits.MAX_PICKLE_OPS:,} instructions; a checkpoint's pickle "
                    "only lists its tensors"
                )
            _step(graph, op, arg)
            if stream.tell() - start > limits.MAX_PICKLE_BYTES:
                raise PickleRefused(
                    f"{what} is larger than {limits.MAX_PICKLE_BYTES:,} bytes; a checkpoint's pickle only "
                    "lists its tensors"
                )
    except PickleRefused as e:
        return str(e)
    except Exception:  # malformed: the unpickler reports it
        return ""
    return ""


def _step(graph: _Graph, op: pickletools.OpcodeInfo, arg: object) -> None:
    """Apply one opcode to the simulated stack."""
    name, stack = op.name, graph.stack
    if name == "MARK":
        stack.append(_MARK)
    elif name in _MEMO_PUT or name == "MEMOIZE":
        if stack and stack[-1] != _MARK:
            graph.remember(int(arg) if name != "MEMOIZE" else len(graph.memo), stack[-1])  # type: ignore[call-overload]
    elif name in _MEMO_GET:
        stack.append(graph.recall(int(arg)))  # type: ignore[call-overload]
    elif name == "DUP":
        if stack:
            stack.append(stack[-1])
    elif name not in ("STOP", "PROTO", "FRAME"):
        popped = _pop_inputs(op, stack)
        if name in _IN_PLACE and popped:  # items go into a container already on the stack (popped last)
            graph.fill(popped[-1], popped[:-1])
            stack.append(popped[-1])
        elif op.stack_after:
            vid = graph.new(popped)
            stack.extend([vid] * len(op.stack_after))


def _pop_inputs(op: pickletools.OpcodeInfo, stack: list[int]) -> list[int]:
    """Pop what `op` consumes (top first)."""
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
    return popped


def pickle_member(infos: list[zipfile.ZipInfo]) -> tuple[zipfile.ZipInfo | None, str]:
    """(the entry torch.load unpickles, '') or (None, why the archive is refused). torch's zip reader takes
    the archive's folder from its FIRST entry and reads '<folder>/data.pkl'; an archive holding more than one
    pickle, or one name twice, could show a scan one entry and torch.load another, so it is refused."""
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        return None, "the archive names one entry twice; torch.save never does"
    pickles = [n for n in names if n.endswith(".pkl")]
    if len(pickles) > 1:
        return None, (
            f"the archive holds {len(pickles)} pickles ({', '.join(limits.excerpt(n, 40) for n in pickles[:4])}); "
            "a checkpoint saved by torch.save holds one, data.pkl"
        )
    folder = names[0].split("/", 1)[0] if names else ""
    wanted = f"{folder}/data.pkl"
    return next((i for i in infos if i.filename == wanted), None), ""


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
            member, refused = pickle_member(infos)
            if refused or member is None:
                return refused  # no data.pkl where torch looks: torch.load reports it
            if member.file_size > limits.MAX_PICKLE_BYTES:
                return (
                    f"its pickle is {member.file_size:,} bytes; a checkpoint's pickle only lists its "
                    f"tensors (at most {limits.MAX_PICKLE_BYTES:,} bytes are read)"
                )
            data = archive.read(member)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return ""  # damaged: torch.load reports it
    return pickle_problem(io.BytesIO(data))


def legacy_problem(path: Path) -> str:
    """The same checks for the legacy (non-zip) torch.save format: a few pickles in a row, then raw data."""
    with open(path, "rb") as f:
        head = io.BytesIO(f.read(limits.MAX_PICKLE_BYTES + 1))  # the pickles come first, the raw data after
    for _ in range(LEGACY_PICKLES):
        start = head.tell()
        problem = pickle_problem(head)
        if problem or head.tell() == start:
            return problem
        if head.tell() > limits.MAX_PICKLE_BYTES:
            return (
                f"its pickles are larger than {limits.MAX_PICKLE_BYTES:,} bytes; a checkpoint's pickle only "
                "lists its tensors"
            )
    return ""


def torch_file_problem(path: Path, is_zip: bool) -> str:
    """Why this .pt file is refused before torch.load reads it; '' when torch.load may try."""
    return zip_problem(path) if is_zip else legacy_problem(path)
