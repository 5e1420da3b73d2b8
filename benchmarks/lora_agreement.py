"""LoRA adapters (issue 35.1): attnlab's run of an adapter folder against peft's merged model, per adapter layout.

    python benchmarks/lora_agreement.py

Each adapter is written by peft on a tiny random transformers model (tests/support/lora_tiny.py; nothing is
downloaded), opened with attnlab.load(ADAPTER_DIR) and traced on one sentence at strength 1, 0 and back to 1.
Printed per case: max |Δlogit| against peft's merge_and_unload() (fp32), whether strength 0 equals the base
model's own logits bit for bit (torch.equal), the first adapted layer and where the strength change resumed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attnlab
from attnlab.engine import names
from attnlab.engine.options import RunOptions
from tests.support.hf_tiny import IDS
from tests.support.lora_tiny import hf_logits, write_adapter

CASES = {
    "GPT-2 c_attn (fan_in_fan_out), r 4, α 8": (
        "gpt2",
        {"r": 4, "lora_alpha": 8, "target_modules": ["c_attn"], "fan_in_fan_out": True},
    ),
    "Llama q_proj+v_proj, r 4, α 16": ("llama", {"r": 4, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}),
    "Llama q_proj+v_proj rsLoRA, r 4, α 8": (
        "llama",
        {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "use_rslora": True},
    ),
    "Llama layer 1 only (layers_to_transform)": (
        "llama",
        {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "layers_to_transform": [1]},
    ),
}


def main() -> None:
    print(f"{'adapter':44} {'max |Δlogit| vs peft':>22} {'s=0 == base':>12} {'adapted from':>13} {'resumed at':>11}")
    for label, (family, lora) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            base, adapter, merged = write_adapter(Path(tmp), family, **lora)
            model = attnlab.load(str(adapter))
            at_one = model.trace(tgt=IDS)[names.LOGITS].float()
            at_zero = model.trace(tgt=IDS, options=RunOptions(adapter_strength=0.0))
            again = model.trace(tgt=IDS)
            plain = attnlab.load(str(base)).trace(tgt=IDS)[names.LOGITS]
            worst = (at_one - hf_logits(merged, IDS)).abs().max().item()
            same = torch.equal(at_zero[names.LOGITS], plain)
            resumed = again.info.get("resumed_from", "-")
            print(f"{label:44} {worst:22.3g} {same!s:>12} {model.config.adapted_from:>13} {resumed:>11}")


if __name__ == "__main__":
    main()
