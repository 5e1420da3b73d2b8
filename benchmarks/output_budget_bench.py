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

  patching: one row of a residual patching map (present/patching.map_row) on a GPT-2-shaped model with GPT-2's
          vocabulary of 50,257 (2 layers of width 32) over --map-tokens positions, against reading the row's runs
          into a list as map_row did before issue 38 (`list(patched_logits(...))`): the peak RSS above the start

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


PATCH_CHILD = r"""
import sys
from pathlib import Path
import torch
from attnlab.commands.loading import load_any
from attnlab.engine.options import RunOptions
from attnlab.engine.patch_sweep import patched_logits
from attnlab.present import patching
mode, folder, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rss(key):
    return int(Path("/proc/self/status").read_text().split(key + ":")[1].split()[0]) * 1024
model = load_any(folder)
torch.manual_seed(1)
ids_a, ids_b = (torch.randint(4, 50257, (tokens,)).tolist() for _ in range(2))
a, b = model.trace(tgt=ids_a), model.trace(tgt=ids_b)
made = patching.new_map(a, b, "residual")
cells = made.cells[1]
start = rss("VmRSS")
if mode == "list":
    patching.row_logit_diffs(list(patched_logits(model, None, ids_b, RunOptions(), cells)), made.answer)
else:
    patching.map_row(model, None, ids_b, RunOptions(), cells, made.answer)
print(len(cells), rss("VmHWM") - start)
"""


def write_gpt2(folder: Path) -> None:
    """A GPT-2-shaped model with GPT-2's vocabulary and tiny layers (random weights, save_pretrained)."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=50257, n_embd=32, n_layer=2, n_head=4, n_positions=1024)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)


def run_patch(mode: str, folder: Path, tokens: int) -> tuple[int, int]:
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", PATCH_CHILD, mode, str(folder), str(tokens)], capture_output=True, text=True, env=env
    )
    cells, grown = done.stdout.strip().splitlines()[-1].split()
    return int(cells), int(grown)


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
    parser.add_argument("--map-tokens", type=int, default=64, help="positions of the patching map's row")
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
        write_gpt2(Path(tmp) / "gpt2")
        for mode in ("list", "map_row"):
            cells, grown = run_patch(mode, Path(tmp) / "gpt2", args.map_tokens)
            what = "the row's runs in a list (before)" if mode == "list" else "map_row, one run at a time"
            row = f"a row of {cells} cells × [{args.map_tokens}, 50,257] logits"
            print(f"patching: {row}, {what}: peak RSS +{grown / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
