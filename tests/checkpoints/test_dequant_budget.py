"""Dequantized weights counted before they are computed (issue 38). A bitsandbytes folder held in bfloat16 is
computed in float32 one weight at a time: the weights in bfloat16 and the largest of them in float32 are counted
before one value is dequantized (the largest read from transformers' own bitsandbytes layers). The quantization
view's float32 maps of one weight are counted before Ŵ is computed. Each refused in one line."""

from __future__ import annotations

import pytest
import torch

from attnlab.checkpoints import CheckpointError, load_checkpoint
from attnlab.engine import output_budget
from tests.support.bnb_folders import original_folder, quantized_folder, transformers_quantized

pytest.importorskip("bitsandbytes")

WEIGHT = "model.layers.1.self_attn.q_proj.weight"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("dequant-budget")
    return quantized_folder(original_folder(root), root, "nf4")


def test_the_float32_of_the_weight_being_dequantized_is_counted(folder, monkeypatch):
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


def test_a_weight_too_big_to_show_is_said_in_one_line_before_it_is_dequantized(folder, monkeypatch):
    from attnlab.checkpoints import quantized_bnb
    from attnlab.present import quantization
    from attnlab.present.views.model import MessageView

    model = load_checkpoint(folder)
    layer = transformers_quantized(folder).get_submodule(WEIGHT.removesuffix(".weight"))
    floats = layer.in_features * layer.out_features  # one [out, in] map
    computed: list[object] = []
    monkeypatch.setattr(quantized_bnb, "dequantized", lambda p: computed.append(p) or torch.zeros(p.shape))
    monkeypatch.setattr(output_budget, "memory_room", lambda: 4 * floats)  # room for one map, not the view's
    view = quantization.quantization_view(model.metadata, WEIGHT, None)
    assert isinstance(view, MessageView) and computed == []
    (line,) = view.message.splitlines()
    assert line.startswith(f"{WEIGHT} cannot be shown: showing it in float32 ({floats:,} values a map) needs about")
    assert f"but only {output_budget.amount(4 * floats)} is available" in line
