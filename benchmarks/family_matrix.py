"""The family matrix: every tiny random Hugging Face model of the tests (tests/support/hf_tiny.py CASES and
tests/support/family_cases.py FAMILY_CASES), opened through attnlab's engine and compared with transformers'
eager forward.

    python benchmarks/family_matrix.py            # a Markdown table: model_type, case, mechanisms, max |diff|
    python benchmarks/family_matrix.py --only gemma mistral

max |diff| is the largest absolute difference, in float32, over every layer's per-head attention weights,
every hidden state and the logits (tests/families/test_hf_reference.py and tests/families/test_hf_families.py
assert ≤ 1e-4).
Nothing is downloaded: each model is built from a config object with re-drawn random weights.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # attnlab and tests.support from this checkout

from attnlab.checkpoints.hf import convert  # noqa: E402
from tests.support.family_cases import FAMILY_CASES  # noqa: E402
from tests.support.hf_tiny import CASES, compare_with_hf  # noqa: E402
from tests.support.hf_tiny_alibi import MPNET_CASES, T5_CASES  # noqa: E402  (encoder-only and encoder-decoder: not in FAMILY_CASES)

FIRST_SEVEN = {  # what the first seven families' cases exercise (the new ones carry theirs in FAMILY_CASES)
    "gpt2": "learned positions, fused Conv1D c_attn, tanh-GELU, tied",
    "llama": "RMSNorm, SwiGLU, half-split rotary, GQA",
    "qwen2": "+ Q/K/V biases, tied",
    "bert": "encoder, post-norm, token types, MLM head",
    "bert-no-head": "encoder without the MLM head",
    "roberta": "learned positions offset 2",
    "distilbert": "no token types",
    "marian": "encoder-decoder, Marian sinusoids, logits bias",
}


def rows(only: list[str] | None):
    cases = {name: (case, FIRST_SEVEN[name]) for name, case in CASES.items()} | FAMILY_CASES | MPNET_CASES | T5_CASES
    for name, (case, mechanisms) in cases.items():
        if only and name not in only:
            continue
        model, hf_config = case.build()
        config, state, _notes = convert(hf_config, model.state_dict())
        errors = compare_with_hf(case, model, config, state)
        yield hf_config["model_type"], name, mechanisms, max(errors.values()), len(errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="case names (default: every case)")
    args = parser.parse_args(argv)
    print("| `model_type` | case | mechanisms | max \\|diff\\| (tensors compared) |")
    print("|---|---|---|---|")
    types = set()
    for model_type, name, mechanisms, worst, n in rows(args.only):
        types.add(model_type)
        print(f"| `{model_type}` | {name} | {mechanisms} | {worst:.1e} ({n}) |", flush=True)
    print(f"\n{len(types)} model types.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
