"""`attnlab trace --out` counted before it writes (issue 38): the issue's case, a ~20k-parameter Llama with 131,072
positions traced on 6,000 tokens, under a memory limit and onto a folder without the room.

    python benchmarks/output_budget_bench.py                      # 6,000 tokens, ATTNLAB_MEMORY_LIMIT 2 GB
    python benchmarks/output_budget_bench.py --tokens 2000 --limit 0   # no limit: the file is written

The folder: transformers' LlamaConfig(hidden_size=16, intermediate_size=32, 2 layers, 4 heads, 2 KV heads,
max_position_embeddings=131,072, vocabulary 512) with its random initial weights, written by save_pretrained, and
a character-level tokenizer, so the sentence "abc…" is exactly `--tokens` tokens (under the 10,000 characters a
sentence may have). Each case runs in its own child
process, which reports its exit code, wall time, peak RSS (VmHWM), its stderr and whether a file was left:

  memory: attnlab trace --out under ATTNLAB_MEMORY_LIMIT=--limit (the write's peak counted against it)
  disk:   the same without the limit, shutil.disk_usage saying the folder has --free bytes free

Before issue 38 the disk case wrote (or failed part way, on a real disk); the memory case was already refused by
issue 34's plan (engine/trace_file.plan_npz), measured on 9ab0b57 at 5.5 GB of memory and a 4.9 GB file.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
from collections import namedtuple
case, folder, out, tokens, free = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
if case == "disk":
    from attnlab.engine import output_budget
    Usage = namedtuple("Usage", "total used free")
    output_budget.shutil.disk_usage = lambda _folder: Usage(10**12, 10**12 - free, free)
from attnlab.cli import main
sentence = "".join(chr(ord("a") + i % 26) for i in range(tokens))
start = time.perf_counter()
code = main(["trace", "--checkpoint", folder, "--src", sentence, "--out", out])
wall = time.perf_counter() - start
hwm = int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) * 1024
left = sorted(p.name for p in Path(out).parent.iterdir())
print(json.dumps({"code": code, "wall_s": wall, "peak_rss": hwm, "left": left}))
"""


def write_folder(folder: Path) -> int:
    """config.json, model.safetensors and a word tokenizer; returns the parameter count."""
    import torch
    import transformers
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=512,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=131_072,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {chr(ord("a") + i): 3 + i for i in range(26)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), "isolated")  # one token a character
    tok.save(str(folder / "tokenizer.json"))
    return sum(p.numel() for p in model.parameters())


def run_case(case: str, folder: Path, tokens: int, limit: int, free: int) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"attnlab-{case}-")) / "t.npz"
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"}
    if case == "memory" and limit:
        env["ATTNLAB_MEMORY_LIMIT"] = str(limit)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(folder), str(out), str(tokens), str(free)],
        capture_output=True,
        text=True,
        env=env,
    )
    shutil.rmtree(out.parent, ignore_errors=True)  # what a case left is in its report
    lines = done.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    report["stdout"] = [line for line in lines[:-1] if line.startswith(("Writing", "Saved"))]
    report["stderr"] = [line for line in done.stderr.strip().splitlines() if line.startswith("attnlab")]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=6000)
    parser.add_argument("--limit", type=int, default=2_000_000_000, help="ATTNLAB_MEMORY_LIMIT (0: none)")
    parser.add_argument("--free", type=int, default=100_000_000, help="the disk case's free bytes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama"
        params = write_folder(folder)
        print(f"Llama of {params:,} parameters, 131,072 positions; {args.tokens:,} tokens")
        for case in ("memory", "disk"):
            r = run_case(case, folder, args.tokens, args.limit, args.free)
            said = " | ".join(r["stderr"] + r["stdout"])
            print(
                f"{case:6}: exit {r['code']}, {r['wall_s']:.1f} s, peak RSS {r['peak_rss'] / 1e9:.2f} GB, "
                f"{len(r['stderr'])} line(s) on stderr, files left {r['left']}\n        {said}"
            )


if __name__ == "__main__":
    main()
