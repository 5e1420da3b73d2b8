"""A bitsandbytes folder dequantized to bfloat16 is computed in float32 one weight at a time (issue 38): the
weights in bfloat16 and the largest of them in float32 are counted before one value is dequantized, the largest
read from transformers' own bitsandbytes layers; refused in one line."""

from __future__ import annotations

import pytest
import torch

from attnlab.checkpoints import CheckpointError, load_checkpoint
from attnlab.engine import output_budget
from tests.support.bnb_folders import original_folder, quantized_folder, transformers_quantized

pytest.importorskip("bitsandbytes")


def test_the_float32_of_the_weight_being_dequantized_is_counted(tmp_path, monkeypatch):
    folder = quantized_folder(original_folder(tmp_path), tmp_path, "nf4")
    reference = transformers_quantized(folder)
    largest = max(m.in_features * m.out_features for m in reference.modules() if type(m).__name__ == "Linear4bit")
    values = sum(t.numel() for t in load_checkpoint(folder).module.checkpoint_tensors().values())
    held = 2 * values  # bfloat16
    monkeypatch.setattr(output_budget, "memory_room", lambda: held + 2 * largest)  # the weights, not one in float32
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(folder, dtype="bfloat16")
    (line,) = str(refused.value).splitlines()
    assert f"while it is computed, the largest ({largest:,} values) in float32 needs about" in line
    monkeypatch.setattr(output_budget, "memory_room", lambda: held + 4 * largest)
    loaded = load_checkpoint(folder, dtype="bfloat16").module.checkpoint_tensors().values()
    assert torch.bfloat16 in {t.dtype for t in loaded}  # exactly enough: it loads
