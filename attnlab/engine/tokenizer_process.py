"""Hugging Face tokenizers run in a child process with a time limit and a memory cap, so a hostile one can be stopped.

A tokenizer file can carry a pre-tokenizer regex that backtracks for minutes (issue 27: `a*a*a*(?=\\s)` takes
over 100 s on 500 letters) without ever reaching the regex engine's retry limit, or a normalizer that turns
each letter into ten million pieces (issue 38). The `tokenizers` library holds the Python lock while its Rust
code works, so no thread of this process, the GUI thread included, runs until it returns, and nothing can
interrupt it. Chunking the text does not help (one long word is enough), and no scan can tell every slow regex
up front. So each tokenizer that needs it gets one long-lived child process (`python -c`, importing only
`tokenizers`, its address space capped at TOKENIZER_MEMORY_CAP) that encodes; the parent waits on the pipe with
the lock released, and a child that runs past the limit is killed (a new one starts for the next text) and
the call raises TokenizerError in one line; so does a child that ran out of memory, or that made more than
MAX_PIECES_PER_CHAR pieces per character (engine/tokenizer_bounds.py). The ids are the child's
`Tokenizer.encode` of the same text with the same tokenizer JSON, so they are the in-process ids
(tests/robustness/test_hostile_app_tokenizer.py).

Who gets a child: every encode on a thread with a time limit (`limit_this_thread`: the Session's worker
thread, set by the Session itself, so a window built any way has it; `set_encode_timeout` for the whole
process), and, on any thread, a tokenizer whose normalizer could make too much text to hold in-process
(engine/tokenizer_bounds.py; DEFAULT_TIMEOUT_S then). Any other encode (the CLI, the API and the tests
with ordinary tokenizers) stays the plain in-process call.

POSIX only (select on a pipe, setrlimit); elsewhere the in-process call stays.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import weakref
from typing import Any

from attnlab.limits import MAX_PIECES_PER_CHAR, TOKENIZER_MEMORY_CAP

# argv: the address-space cap in bytes, the most pieces per character; stdin: the tokenizer JSON, then texts
CHILD = r"""
import json, resource, sys
cap, per_char = int(sys.argv[1]), int(sys.argv[2])
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
from tokenizers import Tokenizer
spec = sys.stdin.readline()
tok = Tokenizer.from_str(spec)
def leaves(n):  # a Sequence's normalizers, flattened: each step's output is checked before the next runs
    return [x for m in n["normalizers"] for x in leaves(m)] if n.get("type") == "Sequence" else [n]
def alone(n):
    shell = {"model": {"type": "WordLevel", "vocab": {}, "unk_token": "?"}, "normalizer": n, "added_tokens": []}
    return Tokenizer.from_str(json.dumps(shell)).normalizer
try:
    steps = [alone(n) for n in leaves(json.loads(spec)["normalizer"])] if tok.normalizer is not None else []
except Exception:
    steps = [tok.normalizer]
for line in sys.stdin:
    try:
        text = json.loads(line)
        most, made = per_char * max(1, len(text)), text
        for step in steps:
            made = step.normalize_str(made)
            if len(made) > most:
                break
        made = len(made)
        enc = tok.encode(text, add_special_tokens=False) if made <= most else None
        what, made = ("characters", made) if enc is None else ("pieces", len(enc.ids))
        out = {"too_many": made, "what": what} if made > most else {"tokens": enc.tokens, "ids": enc.ids}
    except MemoryError:
        out = {"memory": True}
    except BaseException as e:
        out = {"error": (str(e).splitlines() or [type(e).__name__])[0][:200]}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""

DEFAULT_TIMEOUT_S = 10.0  # the limit of a child started for a tokenizer that may multiply text (no limit set)
MEMORY_SIGNALS = (-6, -9)  # SIGABRT: Rust's allocation failure aborts; SIGKILL: the kernel's out-of-memory killer

_timeout_s: float | None = None
_thread = threading.local()  # .timeout_s: this thread's own limit (the Session's worker thread)
_children: weakref.WeakKeyDictionary[Any, _Child] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def set_encode_timeout(seconds: float | None) -> None:
    """Encode with Hugging Face tokenizers in a child process stopped after `seconds`, on every thread (None:
    in-process wherever that is safe)."""
    global _timeout_s
    _timeout_s = seconds if seconds is None or os.name == "posix" else None


def limit_this_thread(seconds: float | None) -> None:
    """Encode in a child stopped after `seconds` on the calling thread (the Session calls it on its worker)."""
    _thread.timeout_s = seconds if seconds is None or os.name == "posix" else None


def encode_timeout() -> float | None:
    """The time limit of an encode on this thread: the stricter of its own and the process's; None: none set."""
    limits = [t for t in (getattr(_thread, "timeout_s", None), _timeout_s) if t is not None]
    return min(limits) if limits else None


def can_isolate() -> bool:
    return os.name == "posix"


class EncodeTimeout(Exception):
    """The child ran past the limit and was stopped."""


class _Child:
    """One child process that encodes with one tokenizer (its JSON sent first)."""

    def __init__(self, hf_json: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(TOKENIZER_MEMORY_CAP), str(MAX_PIECES_PER_CHAR)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self.cancelled = False  # stopped by stop_all (a Cancel), not by its own failure
        assert self.proc.stdin is not None
        self.proc.stdin.write(hf_json.replace("\n", " ") + "\n")
        self.proc.stdin.flush()

    def encode(self, text: str, timeout_s: float) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(text) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)  # waits without the Python lock
        if not ready:
            self.stop()
            raise EncodeTimeout
        line = self.proc.stdout.readline()
        if not line:  # the child died: a Cancel, its memory cap, or a crash in the Rust code
            self.stop()
            if self.cancelled:
                return {"error": "stopped by Cancel"}
            if self.proc.returncode in MEMORY_SIGNALS:
                return {"memory": True}
            return {"error": f"the tokenizer process ended unexpectedly (exit status {self.proc.returncode})"}
        return json.loads(line)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def __del__(self) -> None:  # its tokenizer is gone
        if self.proc.poll() is None:
            self.proc.kill()


def stop_all() -> None:
    """Stop every tokenizer child now (a Cancel): an encode waiting on one fails at once; the next starts anew."""
    for child in list(_children.values()):
        if child.proc.poll() is None:
            child.cancelled = True
            child.proc.kill()


class TooManyPieces(Exception):
    """The child made more than MAX_PIECES_PER_CHAR per character (args: how many, "pieces" or "characters")."""


class OutOfMemory(Exception):
    """The child ran out of its TOKENIZER_MEMORY_CAP."""


def encode_isolated(owner: Any, text: str) -> tuple[list[str], list[int]]:
    """(tokens, ids) of `owner.hf.encode(text, add_special_tokens=False)` (owner: an attnlab tokenizer around a
    tokenizers.Tokenizer), computed in the owner's child process; raises EncodeTimeout past the limit,
    TooManyPieces and OutOfMemory, RuntimeError with the tokenizer's own one-line message when it fails."""
    limit = encode_timeout()
    timeout_s = limit if limit is not None else DEFAULT_TIMEOUT_S
    with _lock:  # one text at a time per process (the session's worker is the only caller in the app)
        child = _children.get(owner)
        if child is None or child.proc.poll() is not None:
            child = _children[owner] = _Child(owner.hf.to_str())
        try:
            out = child.encode(text, timeout_s)
        except EncodeTimeout:
            del _children[owner]
            raise
        except OSError as e:  # a broken pipe: the next call starts a new child
            del _children[owner]
            raise RuntimeError(f"the tokenizer process failed ({e})") from None
    if "too_many" in out:
        raise TooManyPieces(int(out["too_many"]), str(out.get("what", "pieces")))
    if "memory" in out:
        raise OutOfMemory
    if "error" in out:
        raise RuntimeError(out["error"])
    return list(out["tokens"]), [int(i) for i in out["ids"]]
