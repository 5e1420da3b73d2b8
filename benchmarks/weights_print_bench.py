"""How long the weights' fingerprint (engine/weights_print.py) takes: it runs when a lean trace replays a layer and
twice per LiveModel.trace (the run key). An 8B Llama holds 291 parameter tensors; the print's cost follows the
number of tensors, not their size, so the bench times 291 tensors of a few sizes and prints the figures.

    python benchmarks/weights_print_bench.py [--device cuda]"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from attnlab.engine.weights_print import weights_print

N_TENSORS = 291  # Llama-3-8B: 32 layers x 9 + embeddings, final norm, head


def stack(side: int, device: str) -> nn.Module:
    m = nn.Module()
    for i in range(N_TENSORS):
        m.register_parameter(f"p{i}", nn.Parameter(torch.zeros(side, side, device=device), requires_grad=False))
    return m


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = parser.parse_args().device
    for side in (64, 512, 2048):
        module = stack(side, device)
        weights_print(module)  # warm
        t0 = time.perf_counter()
        for _ in range(10):
            weights_print(module)
        per = (time.perf_counter() - t0) / 10
        total = N_TENSORS * side * side
        print(f"{N_TENSORS} tensors of {side}x{side} ({total / 1e6:.0f}M elements) on {device}: {per * 1e3:.1f} ms")
        del module


if __name__ == "__main__":
    main()
