"""Issue 27's file-side cases (tests/robustness/test_hostile_surfaces_files.py builds them), each opened by
load_checkpoint in a fresh child process under a 6 GB address-space limit and a time limit.

    python benchmarks/hostile_surfaces_bench.py                      # this checkout
    python benchmarks/hostile_surfaces_bench.py --root /tmp/before   # another copy (e.g. `git archive main`)

One row per case: seconds in load_checkpoint, the child's peak resident memory, and the verdict:
  refused      one CheckpointError line
  loaded       the file opened (right only for the control)
  crash        the child died of a signal (SIGSEGV: the C stack overflowed)
  hang         the child ran past --timeout
  alloc        refused or failed only after peak memory passed 900 MB (allocated before validating)
  unclear      any other answer: another exception type, "unexpected", a RecursionError/MemoryError text,
               or a message of several lines
then the count of each verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CHILD = """
import json, resource, sys, time
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]  # measure --root's attnlab
import torch
from attnlab.checkpoints import load_checkpoint
start = time.perf_counter()
try:
    load_checkpoint(sys.argv[1]); kind, message = "ok", ""
except BaseException as e:
    kind, message = type(e).__name__, str(e)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps([kind, message[:3000], time.perf_counter() - start, peak]))
"""
ALLOC_MB = 900
NOISE = ("RecursionError", "AssertionError", "MemoryError", "unexpected", "Traceback", "panicked")


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def cases(d: Path) -> dict[str, Path]:
    from tests.robustness.test_hostile_surfaces_files import build_cases
    from tests.support import hostile_files as h

    out = build_cases(d)
    many = h.gpt2_folder(d / "index-100000-shards", state={})  # before: a quadratic missing-shard check
    weight_map = {f"t{i}": f"model-{i:06d}-of-100000.safetensors" for i in range(100_000)}
    (many / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    out["index-100000-shards"] = many
    from tests.support.gguf_tiny import write_gguf  # issue 36: malformed GGUF files
    from tests.support.hostile_gguf import gguf_cases

    out.update(gguf_cases(d, write_gguf(d, "llama", "Q4_0")))
    return out


def verdict(kind: str, message: str, peak: float, expect_ok: bool) -> str:
    if kind == "ok":
        return "loaded" if expect_ok else "unclear (loaded)"
    if peak > ALLOC_MB:
        return "alloc"
    if kind != "CheckpointError" or "\n" in message.strip() or any(n in message for n in NOISE):
        return "unclear"
    return "refused"


def run_case(path: Path, root: str, timeout: float, tmp: str) -> tuple[str, float | None, float | None, str]:
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1", "ATTNLAB_TORCH_THREADS": "1"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)],
            capture_output=True,
            text=True,
            preexec_fn=limit,
            env=env,
            timeout=timeout,
            cwd=tmp,
        )
    except subprocess.TimeoutExpired:
        return "hang", None, None, f"still running after {timeout:.0f} s"
    if proc.returncode < 0:
        return "crash", None, None, f"killed by signal {-proc.returncode}"
    try:
        kind, message, seconds, peak = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return "crash", None, None, f"exit {proc.returncode}: {(proc.stderr.strip().splitlines() or [''])[-1][:90]}"
    reason = message.split("': ", 1)[-1]  # after "Cannot load the checkpoint '<path>': "
    return verdict(kind, message, peak, path.name == "valid"), seconds, peak, f"{kind}: {reason[:100]!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(HERE.parent), help="folder holding the attnlab package to measure")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a case counts as a hang")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'case':26} {'verdict':10} {'seconds':>8} {'peak MB':>8}  answer")
        for name, path in cases(Path(tmp)).items():
            if args.only not in name:
                continue
            result, seconds, peak, answer = run_case(path, args.root, args.timeout, tmp)
            counts[result.split(" ")[0]] += 1
            secs = f"{seconds:8.2f}" if seconds is not None else f"{'-':>8}"
            mb = f"{peak:8.0f}" if peak is not None else f"{'-':>8}"
            print(f"{name:26} {result:10} {secs} {mb}  {answer}", flush=True)
    print("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
