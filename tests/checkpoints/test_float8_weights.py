"""Weights stored in float8 (an FP8 checkpoint without a quantization_config) open (issue 38.5): they were
refused with a raw NotImplementedError (no min/max in 8 bits). attnlab computes in 16 or 32 bits, so "stored" holds
them in bfloat16 — exactly, every float8 value is a bfloat16 value — with a notice naming the stored dtype, as
transformers widens them into the dtype it loads a model in. References: torch's own conversions and
transformers' eager forward of the same folder."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
from safetensors.torch import save_file  # noqa: E402

import attnlab  # noqa: E402
from attnlab.checkpoints import CheckpointError  # noqa: E402
from attnlab.checkpoints.hf import convert  # noqa: E402
from attnlab.engine.precision import FLOAT8  # noqa: E402
from tests.support.family_cases import FAMILY_CASES  # noqa: E402
from tests.support.hf_tiny import IDS, llama  # noqa: E402


@pytest.mark.parametrize("dtype", sorted(FLOAT8, key=str), ids=str)
def test_every_float8_value_is_held_exactly_in_bfloat16(dtype):
    every = torch.arange(256, dtype=torch.uint8).view(dtype)  # each bit pattern once
    back = every.to(torch.bfloat16).to(dtype).view(torch.uint8)
    wide = every.to(torch.float32)
    same = back == torch.arange(256, dtype=torch.uint8)
    assert bool((same | wide.isnan()).all())  # NaN has several patterns; every number comes back bit for bit


def float8_folder(folder, dtype=torch.float8_e4m3fn, poison: bool = False):
    """A tiny Llama folder as save_pretrained writes it, its weights stored in `dtype`."""
    model, _ = llama()
    model.save_pretrained(str(folder))
    state = {k: v.to(dtype) for k, v in model.state_dict().items() if k != "lm_head.weight" or True}
    if poison:
        state["model.norm.weight"][0] = float("nan")
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"), {"format": "pt"})
    return state


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_a_float8_folder_opens_in_bfloat16_with_a_notice_and_its_exact_weights(tmp_path, dtype):
    state = float8_folder(tmp_path, dtype)
    model = attnlab.load(tmp_path)
    notices = " ".join(model.metadata.get("notices", []))
    assert str(dtype).removeprefix("torch.") in notices and "bfloat16" in notices
    held = model.module.decoder[0].self_attn.w_q.weight
    assert held.dtype == torch.bfloat16
    assert torch.equal(held, state["model.layers.0.self_attn.q_proj.weight"].to(torch.bfloat16))


def test_a_float8_folder_in_float32_gives_transformers_logits(tmp_path):
    float8_folder(tmp_path)
    reference = transformers.AutoModelForCausalLM.from_pretrained(
        str(tmp_path), dtype=torch.float32, attn_implementation="eager"
    )
    with torch.no_grad():
        expected = reference.eval()(torch.tensor([IDS])).logits[0]  # [T, V]
    logits = attnlab.load(tmp_path, dtype="float32").trace(tgt=IDS)["logits"]  # [T, V]
    assert (logits - expected).abs().max().item() <= 1e-5


def test_a_float8_nan_is_named_as_a_nan_not_a_raw_error(tmp_path):
    float8_folder(tmp_path, poison=True)
    with pytest.raises(CheckpointError, match="NaN or infinite") as refused:
        attnlab.load(tmp_path)
    assert "NotImplementedError" not in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("name", list(FAMILY_CASES))
def test_every_family_converts_float8_weights(name):
    case, _ = FAMILY_CASES[name]
    model, hf_config = case.build()
    state = {k: v.to(torch.float8_e4m3fn) if v.is_floating_point() else v for k, v in model.state_dict().items()}
    _config, tensors, _notes = convert(hf_config, state)
    assert tensors
