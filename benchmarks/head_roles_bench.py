"""The head-roles map of a GPT-2-small-shaped model (12 layers × 12 heads, d_model 768, random weights, a
50,257-token output): the seconds from a finished run to the five maps, the repeated-random-sequence probe run
(2 × 50 tokens after the start token) included, on this CPU.

    python benchmarks/head_roles_bench.py
"""

from __future__ import annotations

import os
import time

import torch
from _common import timed

from attnlab.present import head_roles
from tests.support.tiny import build_tiny_model

SENTENCE = " ".join(["the black cat sees the small dog"] * 9)  # 63 words


def main() -> None:
    torch.set_grad_enabled(False)
    live = build_tiny_model(
        "decoder-only", d_model=768, n_heads=12, d_ff=3072, n_decoder_layers=12, max_len=1024, tgt_vocab_size=50257
    )
    trace, run_s = timed(lambda: live.trace(tgt=SENTENCE))
    print(f"the run itself ({len(trace['tgt.tokens'])} tokens): {run_s:.2f} s")
    times, cpu = [], []
    for _ in range(3):
        start = time.process_time()
        view, seconds = timed(lambda: head_roles.head_roles(live, trace))
        times.append(seconds)
        cpu.append(time.process_time() - start)
    rows, cols = view.maps[0].matrix.shape
    print(
        f"head-roles map, {rows} layers × {cols} heads, 5 statistics, probe run included: "
        f"best {min(times):.2f} s, median {sorted(times)[1]:.2f} s of 3 (target ≤ 5 s); "
        f"CPU time best {min(cpu):.2f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
