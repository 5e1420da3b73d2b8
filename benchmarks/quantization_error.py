"""What bitsandbytes' 4 and 8 bits do to the tiny test Llama (tests/support/bnb_folders.py: 2 layers, d_model 64,
weights drawn with std 0.3), measured through attnlab's own reading of the folders transformers writes:

    python benchmarks/quantization_error.py

For each scheme: over the 14 quantized linear weights, the largest and mean |W − Ŵ| and ‖W − Ŵ‖ / ‖W‖ (all of them
together); then the original's and the quantized model's runs on one sentence (as View → Quantization pins them
for Compare): the largest |B − A| of any head's attention weights, of the logits, and how many next-token
predictions differ. Needs transformers and bitsandbytes (the folders are quantized on the CPU, nothing is
downloaded)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from attnlab.checkpoints.errors import Problems  # noqa: E402
from attnlab.checkpoints.hf_folder import read_folder_weights  # noqa: E402
from attnlab.checkpoints.loader import load_checkpoint  # noqa: E402
from attnlab.checkpoints.quantized import dequantize_state  # noqa: E402
from attnlab.engine import names  # noqa: E402
from tests.support.bnb_folders import IDS, SCHEMES, original_folder, quantized_folder  # noqa: E402


def weight_error(original: Path, folder: Path) -> tuple[float, float, float]:
    """(max |W − Ŵ|, mean |W − Ŵ|, ‖W − Ŵ‖ / ‖W‖) over every quantized weight."""
    w = read_folder_weights(original, Problems(original))
    problems = Problems(folder)
    state, _record = dequantize_state(read_folder_weights(folder, problems), problems)
    quantized = [k for k in state if k in w and not torch.equal(state[k], w[k])]
    diff = torch.cat([(state[k] - w[k]).reshape(-1) for k in quantized])
    whole = torch.cat([w[k].reshape(-1) for k in quantized])
    return float(diff.abs().max()), float(diff.abs().mean()), float(diff.norm() / whole.norm())


def run_difference(a_model: object, b_model: object) -> tuple[float, float, int]:
    """(max |B − A| of any attention weight, of the logits, next-token predictions that differ) on IDS."""
    a, b = a_model.trace(tgt=IDS), b_model.trace(tgt=IDS)  # type: ignore[attr-defined]
    sites = [n for n in b if n.endswith(".weights")]
    attention = max(float((b[n] - a[n]).abs().max()) for n in sites)
    logits = float((b[names.LOGITS] - a[names.LOGITS]).abs().max())
    flips = int((b[names.LOGITS].argmax(-1) != a[names.LOGITS].argmax(-1)).sum())
    return attention, logits, flips


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        original = original_folder(root)
        a_model = load_checkpoint(original)
        print(
            f"{'scheme':<11} {'bits/w':>6} {'max|W−Ŵ|':>9} {'mean|W−Ŵ|':>10} {'‖W−Ŵ‖/‖W‖':>11} "
            f"{'max|B−A| attn':>13} {'max|B−A| logits':>15} {'next token differs':>18}"
        )
        for scheme in SCHEMES:
            folder = quantized_folder(original, root, scheme)
            b_model = load_checkpoint(folder)
            bits = b_model.metadata["quantization"]["bits_per_weight"]
            largest, mean, relative = weight_error(original, folder)
            attention, logits, flips = run_difference(a_model, b_model)
            print(
                f"{scheme:<11} {bits:>6.3f} {largest:>9.4f} {mean:>10.4f} {100 * relative:>10.2f}% "
                f"{attention:>13.4f} {logits:>15.4f} {flips:>11} of {len(IDS)}"
            )


if __name__ == "__main__":
    main()
