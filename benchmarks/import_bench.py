"""A GPT-2-small-shaped model (random weights from a config: d 768, 12 layers, 12 heads, vocabulary 50257)
opened through the Hugging Face import path: open time, then attnlab's full trace (every intermediate
recorded) against transformers' eager forward with output_attentions=True, at 128 and 512 tokens on CPU.

    python benchmarks/import_bench.py                 # 128 and 512 tokens
    python benchmarks/import_bench.py --tokens 128 --runs 3 --threads 2

Prints ratio = attnlab full trace ÷ transformers eager (target ≤ 1.0). The two run interleaved, round-robin,
so load from other processes hits both alike; each figure is the median of --runs runs after one warm-up.
Open-to-first-paint of the app on the same folder: `attnlab FOLDER --startup-time` (prints to stderr).
Needs `transformers` and attnlab.checkpoints.hf (the converters).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attnlab  # noqa: E402
from attnlab.engine.options import RunOptions  # noqa: E402


def build_folder(folder: Path, seed: int = 0) -> torch.nn.Module:
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024,
                                     attn_implementation="eager")
    reference = transformers.GPT2LMHeadModel(config).eval()
    reference.save_pretrained(str(folder))
    return reference


def ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def eager_forward(reference, ids) -> None:
    with torch.inference_mode():
        reference(ids, output_attentions=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        from attnlab.checkpoints import hf

        hf.convert  # noqa: B018
    except (ImportError, AttributeError):
        print("attnlab.checkpoints.hf has no convert: nothing to measure", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        reference = build_folder(folder)
        start = time.perf_counter()
        model = attnlab.load(folder)
        print(f"attnlab.load(folder): {(time.perf_counter() - start) * 1000:.0f} ms "
              f"(threads {torch.get_num_threads()})")
        options = RunOptions(device="cpu")
        print(f"{'tokens':>6}  {'attnlab trace ms':>16}  {'transformers ms':>15}  {'ratio':>5}")
        for n in args.tokens:
            ids = torch.randint(0, 50257, (1, n))
            prompt = " ".join(f"#{int(i)}" for i in ids[0])  # no tokenizer files: ids typed as numbers
            model.trace(prompt, options=options), eager_forward(reference, ids)  # warm-up
            ours, theirs = [], []
            for _ in range(args.runs):
                ours.append(ms(lambda p=prompt: model.trace(p, options=options)))
                theirs.append(ms(lambda i=ids: eager_forward(reference, i)))
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"{n:>6}  {a:>16.1f}  {b:>15.1f}  {a / b:>5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
