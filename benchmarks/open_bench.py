"""Opening a GPT-2-small-shaped Hugging Face folder (random weights from a config: d 768, 12 layers, 12 heads,
vocabulary 50257; nothing downloaded): attnlab.load(folder) for a single model.safetensors, 4 shards and a
pytorch_model.bin, and the desktop app's open-to-first-paint / first-trace times on the same folder
(`attnlab FOLDER --startup-time`, offscreen). The trace itself against transformers: benchmarks/hf_bench.py.

    python benchmarks/open_bench.py               # median of 3 opens per layout, then one app start
    python benchmarks/open_bench.py --runs 5 --no-app
    python benchmarks/open_bench.py --runs 1 --no-app --profile   # where one safetensors open spends its time

Issue 9's target: open-to-first-paint of a GPT-2-small-sized folder ≤ 5 s on CPU (the app line below).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (this checkout's attnlab first on sys.path)
import torch

import attnlab


def build_folders(root: Path) -> dict[str, Path]:
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)
    model = transformers.GPT2LMHeadModel(config).eval()
    folders = {"model.safetensors": root / "single", "4 shards": root / "shards", "pytorch_model.bin": root / "bin"}
    model.save_pretrained(str(folders["model.safetensors"]))
    model.save_pretrained(str(folders["4 shards"]), max_shard_size="150MB")
    model.save_pretrained(str(folders["pytorch_model.bin"]), safe_serialization=False)
    for folder in folders.values():
        write_tokenizer(folder)
    return folders


def write_tokenizer(folder: Path) -> None:
    """GPT-2's tokenizer files (vocab.json + merges.txt), a small byte-level BPE trained here (no download).
    Without a tokenizer the app cannot read the example sentence, so it would never trace and never paint."""
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["the black cat sees the small dog", "Hello, world! The cat sat on the mat."] * 50
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok.model.save(str(folder))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))


def app_start(folder: Path) -> str:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ATTNLAB_SETTINGS": str(folder / "settings.ini")}
    code = (
        "import sys; from attnlab.cli import main; "
        "from PySide6.QtCore import QTimer; from PySide6.QtWidgets import QApplication; "
        "QTimer.singleShot(120000, QApplication.quit); sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(folder), "--startup-time", "--quit-after-trace"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    for line in proc.stderr:
        if "after" in line:
            lines.append(line.strip())
        if "first trace painted" in line:
            break
    proc.kill()
    return "; ".join(lines)


def profile_open(folder: Path, top: int = 8) -> None:
    """The functions one attnlab.load(folder) spends most of its own time in (after a warm-up open)."""
    attnlab.load(folder)
    profiler = cProfile.Profile()
    profiler.enable()
    attnlab.load(folder)
    profiler.disable()
    print(f"profile of attnlab.load(model.safetensors), top {top} by own time:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-app", action="store_true")
    parser.add_argument("--profile", action="store_true", help="profile one open of model.safetensors")
    args = parser.parse_args()
    print(f"threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folders = build_folders(Path(tmp))
        for layout, folder in folders.items():
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                attnlab.load(folder)
                times.append(time.perf_counter() - start)
            print(f"attnlab.load, {layout:<18} {statistics.median(times):6.2f} s (median of {args.runs})")
        if args.profile:
            profile_open(folders["model.safetensors"])
        if not args.no_app:
            print("app (attnlab FOLDER):", app_start(folders["model.safetensors"]))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
