"""Hugging Face tokenizers run in a child process with a time limit, so a hostile one can be stopped.

A tokenizer file can carry a pre-tokenizer regex that backtracks for minutes (issue 27: `a*a*a*(?=\\s)` takes
over 100 s on 500 letters) without ever reaching the regex engine's retry limit. The `tokenizers` library
holds the Python lock while its Rust code works, so no thread of this process, the GUI thread included, runs
until it returns, and nothing can interrupt it. Chunking the text does not help (one long word is enough),
and no scan can tell every slow regex up front. So, once `set_encode_timeout(seconds)` is called (the app does;
the CLI, the API and the tests keep the plain in-process call), each tokenizer gets one long-lived child
process (`python -c`, importing only `tokenizers`) that encodes; the parent waits on the pipe with the lock
released, and a child that runs past the limit is killed (a new one starts for the next text) and the call
raises TokenizerError in one line. The ids are the child's `Tokenizer.encode` of the same text with the same
tokenizer JSON, so they are the in-process ids (tests/test_tokenizer_process.py).

POSIX only (select on a pipe); elsewhere the in-process call stays.
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

CHILD = r"""
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_str(sys.stdin.readline())
for line in sys.stdin:
    try:
        enc = tok.encode(json.loads(line), add_special_tokens=False)
        out = {"tokens": enc.tokens, "ids": enc.ids}
    except BaseException as e:
        out = {"error": (str(e).splitlines() or [type(e).__name__])[0][:200]}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""

_timeout_s: float | None = None
_children: weakref.WeakKeyDictionary[Any, _Child] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def set_encode_timeout(seconds: float | None) -> None:
    """Encode with Hugging Face tokenizers in a child process stopped after `seconds` (None: in-process)."""
    global _timeout_s
    _timeout_s = seconds if seconds is None or os.name == "posix" else None


def encode_timeout() -> float | None:
    return _timeout_s


class EncodeTimeout(Exception):
    """The child ran past the limit and was stopped."""


class _Child:
    """One child process that encodes with one tokenizer (its JSON sent first)."""

    def __init__(self, hf_json: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD],
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
        if not line:  # the child died: a Cancel, or a crash in the Rust code
            self.stop()
            return {"error": "stopped by Cancel" if self.cancelled else "the tokenizer process ended unexpectedly"}
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


def encode_isolated(owner: Any, text: str) -> tuple[list[str], list[int]]:
    """(tokens, ids) of `owner.hf.encode(text, add_special_tokens=False)` (owner: an attnlab tokenizer around a
    tokenizers.Tokenizer), computed in the owner's child process; raises
    EncodeTimeout past the limit, RuntimeError with the tokenizer's own one-line message when it fails."""
    timeout_s = _timeout_s if _timeout_s is not None else 0.0
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
    if "error" in out:
        raise RuntimeError(out["error"])
    return list(out["tokens"]), [int(i) for i in out["ids"]]
