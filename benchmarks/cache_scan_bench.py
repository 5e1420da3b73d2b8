"""`attnlab models` and File → Open model… on a 20-repository Hugging Face cache (target: < 1 s each).

    python benchmarks/cache_scan_bench.py              # 20 repositories, 3 repeats
    python benchmarks/cache_scan_bench.py --repos 100

Builds the cache in a temporary folder exactly as huggingface_hub lays it out (tests/support/hf_cache_files.py:
blobs/, snapshots/<commit>/ links, refs/), each repository a small GPT-2 folder (config.json, model.safetensors,
tokenizer-less), some with several revisions, some that attnlab refuses (quantized, custom code, no weights),
then prints
  scan        cached_models() in this process, huggingface_hub's scan_cache_dir and every config.json check,
              torch and attnlab's converters already imported (as in the app)
  command     `attnlab models` as a new process, wall clock, Python start and imports included (attnlab's
              config checks import torch: the same process importing torch alone is printed beside it)
  picker      File → Open model…'s dialog, offscreen: from its creation until its table is filled
Every socket connect raises meanwhile in this process (nothing may reach the network); the command runs with
HF_HUB_OFFLINE unset, so it would reach out if it tried (it does not: see tests/checkpoints/test_cached_models.py).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("ATTNLAB_SETTINGS", os.path.join(tempfile.mkdtemp(), "settings.ini"))


def build_cache(hub: Path, repos: int) -> None:
    from safetensors.torch import save

    from tests.support import hostile_files as h
    from tests.support.hf_cache_files import add_revision

    config = h.GPT2_CONFIG
    weights = save(h.gpt2_state())
    for i in range(repos):
        kind = i % 5
        files = {"config.json": json.dumps(config | {"n_positions": 16 + i}).encode(), "model.safetensors": weights}
        if kind == 1:
            files["config.json"] = json.dumps(config | {"quantization_config": {"quant_method": "gptq"}}).encode()
        elif kind == 2:
            files["config.json"] = json.dumps(
                config | {"model_type": "custom", "auto_map": {"AutoModel": "m.M"}}
            ).encode()
        elif kind == 3:
            del files["model.safetensors"]
        add_revision(hub, f"bench/model-{i:03d}", files)
        if kind == 0:  # a few training steps, as Pythia keeps them
            for step in (1000, 2000):
                changed = {"config.json": files["config.json"], "model.safetensors": weights + b" " * step}
                add_revision(hub, f"bench/model-{i:03d}", changed, refs=(f"step{step}",))


def no_sockets() -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a socket was opened: {args}")

    socket.socket.connect = refuse  # type: ignore[method-assign]


def time_scan(hub: Path, repeats: int) -> tuple[list[float], int]:
    from attnlab.checkpoints import hf  # noqa: F401  (imported by the app long before the picker opens)
    from attnlab.checkpoints.hf_cache_scan import cached_models

    times, count = [], 0
    for _ in range(repeats):
        begun = time.perf_counter()
        models, _ = cached_models(hub)
        times.append(time.perf_counter() - begun)
        count = len(models)
    return times, count


def time_command(hub: Path, repeats: int, code: str = "from attnlab.cli import main; main(['models'])") -> list[float]:
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "PYTHONPATH": str(ROOT)}
    env.pop("HF_HUB_OFFLINE", None)
    times = []
    for _ in range(repeats):
        begun = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - begun)
    return times


def time_picker(hub: Path, repeats: int) -> list[float]:
    from PySide6.QtWidgets import QApplication

    from attnlab.ui.window.cached_models import CachedModelsDialog

    app = QApplication.instance() or QApplication([])
    times = []
    for _ in range(repeats):
        begun = time.perf_counter()
        dialog = CachedModelsDialog(lambda spec: None, cache=str(hub))
        dialog.show()
        while dialog.table.rowCount() == 0:
            app.processEvents()
            time.sleep(0.001)
        app.processEvents()
        times.append(time.perf_counter() - begun)
        dialog.close()
        dialog.deleteLater()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hub = Path(tmp) / "hub"
        build_cache(hub, args.repos)
        no_sockets()
        scan, count = time_scan(hub, args.repeats)
        picker = time_picker(hub, args.repeats)
        command = time_command(hub, args.repeats)
        torch_only = time_command(hub, args.repeats, "import torch")
    print(f"cache: {count} model repositories ({args.repos} built), {args.repeats} repeats; median (min-max) s")
    rows = (("scan", scan), ("command", command), ("  python -c 'import torch' alone", torch_only), ("picker", picker))
    for name, times in rows:
        print(f"  {name:<8} {statistics.median(times):6.3f}  ({min(times):.3f}-{max(times):.3f})")


if __name__ == "__main__":
    main()
