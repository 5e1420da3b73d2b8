"""A residual patching map on the GPT-2-small shape (issue 37): 12 layers × 16 positions = 192 patched runs.

Measures, on random weights of the shape of benchmarks/memory_bench.py (d768, 12 layers, 12 heads, vocabulary
50257), with run A and run B two random 16-token sequences:

- forwards: 192 fast forwards of run B (LiveModel.trace(record=False), what each cell would cost as a whole run);
- map: the map as attnlab draws it (engine/patch_sweep.patched_logits: one recorded run of B, then each cell
  resumed at its layer, recording nothing), run A's recorded trace included;
- whole patched: 192 fast patched runs without resuming (each LiveModel.trace(patch=…, record=False)).

Target (issue 37): map ≤ 3 × forwards. Run from the repository root:

    python benchmarks/patching_bench.py [--tokens 16] [--threads N] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from memory_bench import LAYERS, VOCAB, gpt2_small_live

from attnlab.engine.options import RunOptions
from attnlab.engine.patch_sweep import cells_of, patched_logits


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-whole", action="store_true", help="leave out the 192 whole patched runs")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = gpt2_small_live()
    torch.manual_seed(1)
    ids_a = torch.randint(4, VOCAB, (args.tokens,)).tolist()
    ids_b = torch.randint(4, VOCAB, (args.tokens,)).tolist()
    fast = RunOptions(record=False)
    n_cells = LAYERS * args.tokens
    model.trace(tgt=ids_b, options=fast)  # warm

    def forwards() -> None:
        for _ in range(n_cells):
            model.reuse.runs.clear()  # each a forward, not the last run reused
            model.trace(tgt=ids_b, options=fast)

    def whole_map() -> None:
        a = model.trace(tgt=ids_a)
        flat = [p for row in cells_of(a, "residual") for p in row]
        for p in flat:
            model.trace(tgt=ids_b, options=RunOptions(patch=(p,), record=False))

    def drawn_map() -> None:
        model.reuse.runs.clear()  # nothing of an earlier repeat reused
        model.reuse.last_inputs = None
        a = model.trace(tgt=ids_a)
        flat = [p for row in cells_of(a, "residual") for p in row]
        count = sum(1 for _ in patched_logits(model, None, ids_b, RunOptions(), flat))
        assert count == n_cells

    rows = {"forwards": forwards, "map": drawn_map}
    if not args.skip_whole:
        rows["whole patched"] = whole_map
    seconds = {name: statistics.median(timed(work) for _ in range(args.repeats)) for name, work in rows.items()}
    print(
        f"GPT-2-small shape, {LAYERS} layers × {args.tokens} positions = {n_cells} cells, {args.threads} threads, "
        f"torch {torch.__version__}, median of {args.repeats}"
    )
    for name, s in seconds.items():
        print(f"{name:>14}: {s:7.2f} s  ({s / seconds['forwards']:.2f} × the {n_cells} forwards)")


if __name__ == "__main__":
    main()
