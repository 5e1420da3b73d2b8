"""Time and peak memory of refusing hostile checkpoints (issue 14), each loaded in a fresh child process.

    python benchmarks/hostile_bench.py                      # this checkout
    python benchmarks/hostile_bench.py --root /tmp/before   # another copy of attnlab (e.g. `git archive main`)

Prints one row per input: outcome (the exception type, or "ok"), seconds spent in load_checkpoint (torch's
import excluded), and the child's peak resident memory (torch alone is ~250 MB). Each child runs under a
6 GB address-space limit so an allocation-first loader fails instead of swapping.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
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
    load_checkpoint(sys.argv[1]); outcome = "ok"
except BaseException as e:
    outcome = f"{type(e).__name__}: {str(e).split(': ', 1)[-1][:70]!r}… ({len(str(e)):,} chars)"
print(json.dumps([outcome, time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def cases(d: Path) -> dict[str, Path]:
    from tests.support import hostile_files as h

    def config(name, **fields):
        model = h.tiny_model()
        meta = h.metadata_of(model)
        meta["config"] = json.dumps(json.loads(meta["config"]) | fields)
        return h.safetensors_with(d / name, h.tensors_of(model), meta)

    many = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(200_000)})
    return {
        "deep pickle (20,000 nested lists)": h.torch_zip_with_pickle(d / "deep.pt", h.deep_list_pickle(20_000)),
        "deep pickle (200,000 nested dicts)": h.torch_zip_with_pickle(d / "deep2.pt", h.deep_dict_pickle(200_000)),
        "zip bomb (20 MB in 20 kB)": h.zip_bomb(d / "bomb.pt"),
        "zero-stride tensor of 2^30": h.zero_stride_pt(d / "stride.pt"),
        "header listing 200,000 tensors": h.raw_safetensors(d / "many.safetensors", many),
        "header nested 50,000 deep": h.raw_safetensors(
            d / "nest.safetensors", '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
        ),
        "config src_vocab_size 2e9": config("v.safetensors", src_vocab_size=2_000_000_000),
        "config max_len 5e6": config("m.safetensors", max_len=5_000_000),
        "config d_ff 1e8": config("f.safetensors", d_ff=100_000_000),
        "config 10,000 layers": config("l.safetensors", n_encoder_layers=10_000),
        "config with a 20 MB string": config("s.safetensors", arch="x" * 20_000_000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(HERE.parent), help="folder holding the attnlab package to measure")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": args.root, "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'input':36} {'seconds':>8} {'peak MB':>8}  outcome")
        for name, path in cases(Path(tmp)).items():
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, str(path)],
                capture_output=True,
                text=True,
                preexec_fn=limit,
                env=env,
                timeout=600,
                cwd=tmp,
            )
            try:
                outcome, seconds, peak = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"{name:36} {seconds:8.2f} {peak:8.0f}  {outcome}")
            except (IndexError, ValueError):
                print(
                    f"{name:36} {'-':>8} {'-':>8}  child died (exit {proc.returncode}): "
                    f"{(proc.stderr.strip().splitlines() or [''])[-1][:100]}"
                )


if __name__ == "__main__":
    main()
