"""`attnlab trace --out` against the API's trace on a 135M-parameter Llama-shaped folder (issue 34).

    python benchmarks/trace_out_bench.py                     # 512 tokens; the folder under /tmp, deleted after
    python benchmarks/trace_out_bench.py --tokens 512 --keep /tmp/llama135m --main /work/main

The folder: transformers' LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
num_attention_heads=9, num_key_value_heads=3, vocab_size=49152, tied embeddings: SmolLM2-135M's shape) with its
random initial weights, written by save_pretrained (float32 safetensors), and a word-level tokenizer.json of
49,152 words, so the sentence "w3 w4 …" is exactly `--tokens` tokens. Each measurement runs in its own child
process, which reports its wall time and its peak RSS (VmHWM, model included):

  api:  attnlab.load(folder) then model.trace(sentence)                      (what a script does)
  out:  attnlab trace --checkpoint folder --src sentence --out FILE.npz       (through attnlab.cli.main)
  out --no-lens: the same without the logit lens (31 projections of 512 positions onto 49,152 words)

and, with --main, `out` again with another checkout's attnlab (before the streaming write). Target: the out
run's peak RSS <= the api run's + 0.5 GiB and its time <= 2x the api run's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GIB = 1 << 30
SIZES = dict(
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    vocab_size=49152,
    max_position_embeddings=2048,
    tie_word_embeddings=True,
    bos_token_id=1,
    eos_token_id=2,
)


def write_folder(folder: Path) -> int:
    """config.json, model.safetensors (random weights, transformers' own init) and a word tokenizer."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SIZES))
    model.save_pretrained(folder)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"w{i}": i for i in range(3, SIZES["vocab_size"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>"})
    )
    return sum(p.numel() for p in model.parameters())


CHILD = """
import json, os, sys, time
start = time.perf_counter()
mode, folder, sentence, out = sys.argv[1:5]
import torch
torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
if mode == "api":
    import attnlab
    model = attnlab.load(folder)
    opened = time.perf_counter() - start
    trace = model.trace(sentence)
    result = {"tokens": len(trace["tgt.tokens"]), "open_s": opened}
else:
    from attnlab.cli import main
    extra = ["--no-lens"] if mode == "out-no-lens" else []
    code = main(["trace", "--checkpoint", folder, "--src", sentence, "--out", out, *extra])
    result = {"code": code, "file_bytes": os.path.getsize(out) if os.path.exists(out) else 0}
result["wall_s"] = time.perf_counter() - start
status = open("/proc/self/status").read()
result["peak_rss_bytes"] = int(status.split("VmHWM:")[1].split()[0]) * 1024
print("RESULT " + json.dumps(result))
"""


def measure(mode: str, folder: Path, sentence: str, out: Path, root: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(folder), sentence, str(out)],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        timeout=1800,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{mode} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    said = [line for line in done.stdout.splitlines() if line.startswith("Writing")]
    return json.loads(lines[-1].removeprefix("RESULT ")) | ({"said": said[0]} if said else {})


def disk_floor(folder: Path, n_bytes: int) -> float:
    """Seconds to write `n_bytes` of zeros to a file in `folder` and flush it to disk, as atomic_write does: what
    no writer of that file can beat on this disk."""
    import os
    import time

    chunk = bytes(16 << 20)
    path = folder / "floor.bin"
    start = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(0, n_bytes, len(chunk)):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - start
    path.unlink()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--keep", type=Path, default=None, help="write (or reuse) the folder here and keep it")
    parser.add_argument("--main", type=Path, default=None, help="also time `out` with the attnlab of this checkout")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="attnlab-llama135m-", dir="/tmp"))
    work = Path(tempfile.mkdtemp(prefix="attnlab-trace-out-", dir="/tmp"))
    root = Path(__file__).resolve().parents[1]
    try:
        if not (folder / "model.safetensors").is_file():
            print(f"building the folder in {folder}: {write_folder(folder):,} parameters")
        sentence = " ".join(f"w{3 + i}" for i in range(args.tokens))
        api = measure("api", folder, sentence, work / "unused.npz", root)
        out = measure("out", folder, sentence, work / "trace.npz", root)
        (work / "trace.npz").unlink(missing_ok=True)
        thin = measure("out-no-lens", folder, sentence, work / "trace.npz", root)
        (work / "trace.npz").unlink(missing_ok=True)
        rows = [("api", api), ("out", out), ("out --no-lens", thin)]
        if args.main is not None:
            rows.append((f"out ({args.main})", measure("out", folder, sentence, work / "main.npz", args.main)))
        print(f"{args.tokens} tokens ({api['tokens']} in the api run); api open {api['open_s']:.1f} s")
        for name, r in rows:
            extra = f", file {r['file_bytes'] / 1e9:.2f} GB" if "file_bytes" in r else ""
            print(f"{name:>24}: {r['wall_s']:6.1f} s, peak RSS {r['peak_rss_bytes'] / GIB:.2f} GiB{extra}")
        if "said" in out:
            print(f"said before writing: {out['said']}")
        for name, r in rows[1:3]:
            extra_rss = (r["peak_rss_bytes"] - api["peak_rss_bytes"]) / GIB
            ratio = r["wall_s"] / api["wall_s"]
            print(f"{name} - api peak RSS: {extra_rss:+.2f} GiB (target <= 0.5); time / api: {ratio:.2f} (target <= 2)")
        floor = disk_floor(work, out["file_bytes"])
        print(f"disk floor: {floor:.1f} s to write and fsync {out['file_bytes'] / 1e9:.2f} GB here")
        print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
