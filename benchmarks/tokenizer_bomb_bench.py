"""Time and peak memory of refusing a tokenizer that multiplies text (issue 38), each case in a fresh child process
under a 4 GB address-space limit.

    python benchmarks/tokenizer_bomb_bench.py                      # this checkout
    python benchmarks/tokenizer_bomb_bench.py --root /tmp/before   # another copy of attnlab (e.g. `git archive main`)

The tokenizer.json is legal: a chain of seven `Replace` normalizers, each turning every "a" into ten (ten million
words of each "a"), on a one-layer GPT-2 folder. Rows: the CLI (`attnlab trace --src "a cat"`), the Python API
(`load_checkpoint(...).trace("a cat")`), a one-step normalizer that runs into the tokenizer child's memory cap,
a mild multiplier refused in-process, and a decoder that multiplies text. Each row: the outcome (the refusal's
first words, or the status that ended the child: -6 is SIGABRT), seconds of the refusal itself (imports and the
load excluded; a CLI row is the command's wall time, Python's and torch's start included), peak MB (a CLI row:
the command's peak resident memory; an API row: how much the call raised the process's high-water mark), and
the tokenizer child's peak resident memory where one runs and is still alive.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
LIMIT = 4 << 30
VOCAB = ["<pad>", "<s>", "</s>", "<unk>", "the", "dog", "sits", "on", "mud", "red", "b"]

API = """
import json, sys, time
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]  # measure --root's attnlab
import torch
from attnlab.checkpoints import load_checkpoint
def hwm(pid="self"):
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None
model = load_checkpoint(sys.argv[1])
begun_mb, start = hwm(), time.perf_counter()
try:
    if sys.argv[2] == "decode":
        model.tgt_tokenizer.decode([4, 5])
    else:
        model.trace(sys.argv[2])
    outcome = "ok"
except BaseException as e:
    outcome = f"{type(e).__name__}: {str(e)[:90]}"
seconds = time.perf_counter() - start
try:
    from attnlab.engine import tokenizer_process
    alive = [hwm(c.proc.pid) for c in tokenizer_process._children.values()]
    child = max((mb for mb in alive if mb is not None), default=None)  # a child ended at its cap: no figure
except (ImportError, AttributeError):
    child = None
print(json.dumps([outcome, seconds, hwm() - begun_mb, child]))
"""


def limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def folder(root: Path, name: str, normalizer: Any = None, decoder: Any = None) -> Path:
    """A one-layer GPT-2 folder (tests/support/hostile_files.py) whose tokenizer.json has these parts."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from tests.support.hostile_files import gpt2_folder

    hf = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<unk>"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if normalizer is not None:
        hf.normalizer = normalizer
    if decoder is not None:
        hf.decoder = decoder
    out = gpt2_folder(root / name)
    hf.save(str(out / "tokenizer.json"))
    return out


def cases(root: Path) -> dict[str, tuple[str, Path, str]]:
    from tokenizers import decoders, normalizers

    def chain(levels: int, letter: str, kind: Any) -> Any:
        return kind.Sequence([kind.Replace(letter, " ".join([letter] * 10))] * levels)

    bomb = folder(root, "bomb", chain(7, "a", normalizers))
    return {
        "cli: trace --src 'a cat' (10^7 per 'a')": ("cli", bomb, "a cat"),
        "cli: trace --src 'the dog' (the same folder)": ("cli", bomb, "the dog"),
        "api: trace('a cat') (10^7 per 'a')": ("api", bomb, "a cat"),
        "api: 500 'a' into 10^9 characters (cap)": (
            "api",
            folder(root, "cap", normalizers.Replace("a", "b" * 2_000_000)),
            "a" * 500,
        ),
        "api: 100 per 'a', in-process": ("api", folder(root, "mild", chain(2, "a", normalizers)), "a"),
        "api: decoder 10^7 per 'd'": ("api", folder(root, "decoder", None, chain(7, "d", decoders)), "decode"),
        "api: a good text after all that": ("api", bomb, "the dog sits on mud"),
    }


# runs the CLI and prints its peak memory last (a fresh process: RUSAGE_CHILDREN is that one command's)
WRAP = """
import json, resource, subprocess, sys
status = subprocess.run(sys.argv[1:]).returncode
print(json.dumps([status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024]))
"""


def run(kind: str, path: Path, text: str, root: Path) -> list:
    env = {**os.environ, "PYTHONPATH": str(root), "ATTNLAB_TORCH_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if kind == "api":
        proc = subprocess.run(
            [sys.executable, "-c", API, str(path), text],
            capture_output=True,
            text=True,
            preexec_fn=limit,
            env=env,
            cwd=root,
        )
        if proc.returncode != 0:
            return [f"ended with status {proc.returncode}", None, None, None]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    code = "import sys; from attnlab.cli import main; sys.exit(main(sys.argv[1:]))"
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        cli = [sys.executable, "-c", code, "trace", "--checkpoint", str(path), "--src", text, "--out", f"{out}/t.npz"]
        proc = subprocess.run(
            [sys.executable, "-c", WRAP, *cli], capture_output=True, text=True, preexec_fn=limit, env=env, cwd=root
        )
        seconds = time.perf_counter() - start
    status, peak = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = proc.stderr.strip().splitlines()
    return [f"status {status}, {len(lines)} line(s): {(lines or [''])[-1][:80]}", seconds, peak, None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(HERE.parent), help="the attnlab copy to measure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'case':44} {'seconds':>8} {'peak MB':>8} {'child MB':>8}  outcome")
        for name, (kind, path, text) in cases(Path(tmp)).items():
            outcome, seconds, peak, child = run(kind, path, text, Path(args.root))

            def fmt(x: float | None, spec: str) -> str:
                return f"{'-':>8}" if x is None else format(x, spec)

            print(f"{name:44} {fmt(seconds, '8.2f')} {fmt(peak, '8.0f')} {fmt(child, '8.0f')}  {outcome}")


if __name__ == "__main__":
    main()
