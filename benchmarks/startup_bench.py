"""Launch → first paint of `attnlab` against `python -c "import torch"`, side by side.

The window must paint before torch loads (the model and torch load on a worker after the first paint;
tests/project/test_startup_imports.py checks that nothing the first paint needs imports torch). Each round starts a
fresh process of each kind, alternately, so both see the same load on a shared machine:

  import torch   wall seconds of `python -c "import torch"` (interpreter start included)
  first paint    seconds from the app process's start (/proc) to the window's first Paint event, as
                 `attnlab --startup-time` prints it (interpreter start included); the process is killed then

Both run with bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped for them), as an installed attnlab runs;
the warm-up round writes the caches.

and prints each pair, the ratio first paint / import torch per round, and the median ratio (target ≤ 0.3).
It also says whether torch was already imported at the first paint (it must not be).

    QT_QPA_PLATFORM=offscreen python benchmarks/startup_bench.py [--runs 5] [-- APP ARGUMENTS]

e.g. `-- --present --stage enc.0.self.weights` (the classroom start) or `-- resources/lessons/X.toml`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The app as `attnlab` starts it, with seconds_since_start wrapped so the first-paint line also says whether
# torch was imported by then (the line is printed from inside the Paint event).
APP_CODE = (
    "import sys; import attnlab.commands.app as a; t = a.seconds_since_start; "
    "a.seconds_since_start = lambda: (print('torch imported:', 'torch' in sys.modules, file=sys.stderr), t())[1]; "
    "from attnlab.cli import main; sys.exit(main(sys.argv[1:]))"
)


def import_torch_seconds() -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True, env=env)
    return time.perf_counter() - start


def first_paint_seconds(settings: Path, app_args: list[str]) -> tuple[float, bool]:
    """(seconds to the first paint, whether torch was imported then) of one fresh app process."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ATTNLAB_SETTINGS": str(settings)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached as an install caches it, not compiled every start
    proc = subprocess.Popen(
        [sys.executable, "-c", APP_CODE, *app_args, "--startup-time"], env=env, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    torch_seen = None
    try:
        for line in proc.stderr:
            if line.startswith("torch imported:"):
                torch_seen = line.split(":")[1].strip() == "True"
            elif line.startswith("first paint after"):
                return float(line.split()[3]), bool(torch_seen)
        raise RuntimeError(f"the app exited (status {proc.wait()}) before it painted")
    finally:
        proc.kill()
        proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("app_args", nargs="*", help="after --: arguments for the app")
    args = parser.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Path(tmp) / "settings.ini"
        first_paint_seconds(settings, args.app_args)  # warm the disk cache for both (Qt, the stylesheet, torch's files)
        import_torch_seconds()
        print(f"{'round':>5} {'import torch':>13} {'first paint':>12} {'ratio':>6}  torch at paint")
        for i in range(args.runs):
            if i % 2:  # alternate which goes first
                paint, torch_seen = first_paint_seconds(settings, args.app_args)
                torch_s = import_torch_seconds()
            else:
                torch_s = import_torch_seconds()
                paint, torch_seen = first_paint_seconds(settings, args.app_args)
            ratios.append(paint / torch_s)
            print(f"{i + 1:>5} {torch_s:>11.2f} s {paint:>10.2f} s {ratios[-1]:>6.2f}  {torch_seen}")
    print(f"app arguments: {' '.join(args.app_args) or '(none)'}")
    print(
        f"first paint / import torch: median {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(ratios)} rounds; target <= 0.3"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
