"""Hostile files and inputs, each tried in a fresh child process under an address-space limit: issue 27's and 36's
files (tests/robustness/test_hostile_surfaces_files.py, tests/support/hostile_gguf.py) and issue 38's new surfaces:
the Hugging Face cache, adapters and GGUF files (tests/support/hostile_round3*.py), a lying stand-in hub for
`attnlab get` (tests/support/hostile_hub.py) and the action side (tests/support/hostile_actions.py, when present).

    python benchmarks/hostile_surfaces_bench.py                      # every case, this checkout
    python benchmarks/hostile_surfaces_bench.py --set new            # issue 38's cases only
    python benchmarks/hostile_surfaces_bench.py --set new --cli      # `attnlab info` and `attnlab trace` on each
                                                                     # load case under a 4 GB address space
    python benchmarks/hostile_surfaces_bench.py --root /tmp/before   # another copy (e.g. `git archive main`)

A load case is load_checkpoint(spec); an action case calls its function (TEAM3.md's contract). Per case: seconds
of the work itself, peak resident memory above the child's own after its imports (/proc's VmHWM, reset then), the
files it left in its case folder or its TMPDIR, and the verdict (the first that applies):
  crash        the child died of a signal          hang       it ran past --timeout
  unclear      another exception type, a message of several lines or with a traceback / "unexpected" /
               RecursionError / MemoryError in it, or a hostile file that loaded
  left         refused, but files were left in the case's folder or TMPDIR
  heavy        more than 300 MB above the child's start      slow    more than 2 s
  refused      one line of CheckpointError (a load) or of an attnlab exception / non-zero exit (an action)
  several      a CheckpointError listing several problems, one per line (the commands print it in one line:
               commands/refusal.py)
  handled      the control loaded, or the action returned
then the count of each verdict, per surface and in all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CHILD = """
import contextlib, importlib, io, json, re, sys, time
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]  # measure --root's attnlab
mode, what, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
import torch
from attnlab.checkpoints import CheckpointError, load_checkpoint
if mode == "action":
    module, function = what.split(":")
    call = getattr(importlib.import_module(module), function)
def status(key):
    with open("/proc/self/status") as f:
        return int(re.search(key + r":\\s+(\\d+)", f.read())[1]) / 1024
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) starts again from here: the imports are not what is measured
base = status("VmRSS")
err = io.StringIO()
start = time.perf_counter()
try:
    with contextlib.redirect_stderr(err):
        if mode == "load":
            load_checkpoint(what)
            kind, message = "ok", ""
        else:
            kind, message = "ok", str(call(*args))
except SystemExit as e:
    kind, message = ("ok" if not e.code else "exit"), (err.getvalue().strip() or str(e.code))
except BaseException as e:
    ours = isinstance(e, CheckpointError) or type(e).__module__.startswith("attnlab")
    kind, message = ("attnlab" if ours else type(e).__name__), str(e)
seconds = time.perf_counter() - start
print(json.dumps([kind, message[:3000], seconds, status("VmHWM") - base]))
"""
CLI = "import sys; from attnlab.cli import main; sys.exit(main(sys.argv[1:]))"
SECONDS, ABOVE_MB = 2.0, 300
SEVERAL = re.compile(r"Cannot load the checkpoint '[^\n]*'; \d+ problems:\n- ")  # Problems.message's list
NOISE = ("RecursionError", "AssertionError", "MemoryError", "unexpected", "Traceback", "panicked")


def limiter(gb: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (gb << 30, gb << 30))

    return limit


def old_cases(d: Path) -> dict[str, tuple]:
    """Issue 27's and 36's files: name -> ("load", path, env, folder, expect, surface)."""
    from tests.robustness.test_hostile_surfaces_files import build_cases
    from tests.support import hostile_files as h
    from tests.support.gguf_tiny import write_gguf
    from tests.support.hostile_gguf import gguf_cases

    out = build_cases(d)
    many = h.gpt2_folder(d / "index-100000-shards", state={})  # before: a quadratic missing-shard check
    weight_map = {f"t{i}": f"model-{i:06d}-of-100000.safetensors" for i in range(100_000)}
    (many / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    out["index-100000-shards"] = many
    out.update(gguf_cases(d, write_gguf(d, "llama", "Q4_0")))
    expect = {"valid-folder": "loaded"}
    return {
        n: ("load", str(p), {}, None, expect.get(n, "refused"), "gguf (36)" if n.startswith("gguf") else "files (27)")
        for n, p in out.items()
    }


def new_cases(d: Path) -> dict[str, tuple]:
    """Issue 38's: the load side (cache, adapter, gguf), the lying hub and, when present, the action side."""
    from tests.support.hostile_hub import hub_cases
    from tests.support.hostile_round3 import build_round3_cases, surface

    out: dict[str, tuple] = {
        n: ("load", c.spec, c.env, c.folder, c.expect, surface(n)) for n, c in build_round3_cases(d / "load").items()
    }
    for n, (target, args) in hub_cases(d / "hub").items():
        out[n] = ("action", target, args, d / "hub" / n, "refused", "hub")
    try:
        from tests.support.hostile_actions import action_cases
    except ImportError:
        return out
    for n, (target, args) in action_cases(d / "actions").items():
        own = d / "actions" / n  # most cases write under d/<name>; cases run at once must not see each other's
        folder = own if own.is_dir() else None
        out[n] = ("action", target, args, folder, "either", "action: " + n.split("-", 1)[0])
    return out


def files_under(folder: Path | None) -> set[str]:
    if folder is None or not folder.exists():
        return set()
    return {str(p) for p in folder.rglob("*")}


def child_env(root: str, tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1", "ATTNLAB_TORCH_THREADS": "1"}
    return env | {"TMPDIR": str(tmp)} | extra


def verdict(kind: str, message: str, seconds: float, above: float, left: int, expect: str) -> str:
    one_line = "\n" not in message.strip() and not any(n in message for n in NOISE)
    if kind == "ok":
        if expect == "refused" and not message:
            return "unclear (loaded)"
        outcome = "handled"
    elif kind in ("attnlab", "exit") and one_line:
        outcome = "refused"
    elif kind == "attnlab" and SEVERAL.match(message) and not any(n in message for n in NOISE):
        outcome = "several"
    else:
        return "unclear"
    if left and outcome in ("refused", "several"):
        return "left"
    if above > ABOVE_MB:
        return "heavy"
    return "slow" if seconds > SECONDS else outcome


def run_case(case: tuple, root: str, timeout: float, tmp: Path) -> tuple:
    mode, what, extra, folder, expect, _surface = case
    tmp.mkdir(parents=True)
    env = child_env(root, tmp, extra if mode == "load" else {})
    args = json.dumps(extra if mode == "action" else [])
    before = files_under(folder)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, mode, what, args],
            capture_output=True,
            text=True,
            preexec_fn=limiter(6),
            env=env,
            timeout=timeout,
            cwd=tmp,
        )
    except subprocess.TimeoutExpired:
        return "hang", None, None, 0, f"still running after {timeout:.0f} s"
    left = len(files_under(folder) - before) + len(files_under(tmp))
    if proc.returncode < 0:
        return "crash", None, None, left, f"killed by signal {-proc.returncode}"
    try:
        kind, message, seconds, above = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return (
            "crash",
            None,
            None,
            left,
            f"exit {proc.returncode}: {(proc.stderr.strip().splitlines() or [''])[-1][:90]}",
        )
    reason = message.split("': ", 1)[-1]  # after "Cannot load the checkpoint '<path>': "
    return verdict(kind, message, seconds, above, left, expect), seconds, above, left, f"{kind}: {reason[:110]!r}"


def run_cli(case: tuple, root: str, timeout: float, tmp: Path) -> list[tuple[str, int | str, str]]:
    """`attnlab info` and `attnlab trace` on one load case under a 4 GB address space: (command, returncode or
    'hang', last line of stderr)."""
    _mode, spec, extra, _folder, _expect, _surface = case
    tmp.mkdir(parents=True)
    out = []
    for argv in (["info", spec], ["trace", "--checkpoint", spec, "--src", "a cat", "--out", str(tmp / "t.npz")]):
        try:
            proc = subprocess.run(
                [sys.executable, "-c", CLI, *argv],
                capture_output=True,
                text=True,
                preexec_fn=limiter(4),
                env=child_env(root, tmp, extra),
                timeout=timeout,
                cwd=tmp,
            )
            lines = proc.stderr.strip().splitlines()
            out.append((argv[0], proc.returncode, f"{len(lines)} line(s): {(lines or [''])[-1][:100]}"))
        except subprocess.TimeoutExpired:
            out.append((argv[0], "hang", ""))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(HERE.parent), help="folder holding the attnlab package to measure")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a case counts as a hang")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--set", choices=("all", "old", "new"), default="all", help="which cases (default all)")
    parser.add_argument("--cli", action="store_true", help="run `attnlab info` / `trace` on each load case instead")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cases = (old_cases(d / "old") if args.set != "new" else {}) | (
            new_cases(d / "new") if args.set != "old" else {}
        )
        cases = {n: c for n, c in cases.items() if args.only in n}
        runs = d / "runs"
        if args.cli:
            return cli_sweep({n: c for n, c in cases.items() if c[0] == "load"}, args, runs)
        with ThreadPoolExecutor(args.jobs) as pool:
            results = pool.map(lambda nc: run_case(nc[1], args.root, args.timeout, runs / nc[0]), cases.items())
            table(cases, results)


def table(cases: dict[str, tuple], results) -> None:
    totals: Counter[str] = Counter()
    per: dict[str, Counter[str]] = defaultdict(Counter)
    worst = [0.0, 0.0]
    print(f"{'case':34} {'verdict':10} {'seconds':>8} {'MB above':>8} {'left':>4}  answer")
    for (name, case), (result, seconds, above, left, answer) in zip(cases.items(), results, strict=True):
        totals[result.split(" ")[0]] += 1
        per[case[5]][result.split(" ")[0]] += 1
        worst = [max(worst[0], seconds or 0), max(worst[1], above or 0)]
        secs = f"{seconds:8.2f}" if seconds is not None else f"{'-':>8}"
        mb = f"{above:8.0f}" if above is not None else f"{'-':>8}"
        print(f"{name:34} {result:10} {secs} {mb} {left:4}  {answer}", flush=True)
    for surface, counts in sorted(per.items()):
        print(
            f"{surface:20} {sum(counts.values()):4} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        )
    print(f"totals ({sum(totals.values())} cases): " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))
    print(f"worst: {worst[0]:.2f} s, {worst[1]:.0f} MB above the child's start")


def cli_sweep(cases: dict[str, tuple], args: argparse.Namespace, runs: Path) -> None:
    signals, hangs, many_lines, commands = 0, 0, 0, 0
    with ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda nc: run_cli(nc[1], args.root, args.timeout, runs / nc[0]), cases.items())
        for name, outcome in zip(cases, results, strict=True):
            for command, rc, last in outcome:
                commands += 1
                signals += isinstance(rc, int) and rc < 0
                hangs += rc == "hang"
                many_lines += isinstance(rc, int) and rc != 0 and not last.startswith("1 line")
                print(f"{name:34} {command:6} {rc!s:>5}  {last}", flush=True)
    print(
        f"{commands} commands on {len(cases)} load cases under a 4 GB address space: {signals} ended by a signal, "
        f"{hangs} hung, {many_lines} refused in more than one line"
    )


if __name__ == "__main__":
    main()
