"""Weights as stored (issue 23, item 1): a bf16 Hugging Face folder opens in bf16 (no float32 copy), runs in
bf16 and agrees with transformers' own bf16 eager forward; precision "float32" gives transformers' float32
numbers; every entry is read as float32.

bf16 tolerance: bf16 keeps 8 significant bits (a relative step of 2^-8 = 3.9e-3). Two layers of random weights
drawn 15x wider than HF's init (hf_tiny._sharpen), run in a different order of operations than transformers'
(fused attention, attnlab's own matmul order), differ by a few bf16 steps of the largest logit: the logits are
compared at 2e-2 of the largest |logit| (about 5 bf16 steps), the attention weights (probabilities in [0, 1])
at 2e-2 absolute; fp16 (10 bits) at 5e-3 for both. Measured: bf16 Llama 1.1e-2 relative on the logits, fp16
1.1e-3. On the CPU fp16 runs as stored too (torch 2.13 computes every op attnlab uses in fp16 there)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers

import attnlab
from attnlab.checkpoints import CheckpointError
from attnlab.engine import names
from attnlab.engine.options import RunOptions
from tests.support import hf_tiny

BF16_LOGITS = 2e-2  # of the largest |logit| (see the module docstring)
TOLERANCE = {torch.bfloat16: BF16_LOGITS, torch.float16: 5e-3}  # fp16: 10 bits, ~5 steps of 2^-10
FP32 = 1e-4


def _folder(tmp_path: Path, build, dtype: torch.dtype) -> Path:
    model, _config = build()
    model = model.to(dtype)
    folder = tmp_path / f"{build.__name__}-{str(dtype).removeprefix('torch.')}"
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def _hf(folder: Path, dtype: torch.dtype):
    """transformers' own eager forward of the saved folder, opened in `dtype` (its rotary frequencies are
    computed in float32 as from_pretrained makes them, not rounded through bf16 by a .to())."""
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation="eager")
    assert {p.dtype for p in model.parameters()} == {dtype}
    with torch.no_grad():
        return model.eval()(torch.tensor([hf_tiny.IDS]), output_attentions=True)


@pytest.mark.parametrize("build", [hf_tiny.llama, hf_tiny.gpt2], ids=["llama", "gpt2"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_a_half_precision_folder_runs_as_stored_as_transformers_does(tmp_path, build, dtype):
    folder = _folder(tmp_path, build, dtype)
    m = attnlab.load(folder)
    assert {p.dtype for p in m.module.parameters()} == {dtype}  # held as stored, never widened
    t = m.trace(tgt=list(hf_tiny.IDS))
    assert t.options.dtype == str(dtype).removeprefix("torch.")
    assert t.device_value(names.LOGITS).dtype == dtype  # recorded in the compute dtype
    out = _hf(folder, dtype)
    ours, theirs = t[names.LOGITS], out.logits[0].float()
    assert ours.dtype == torch.float32  # read as float32 for display
    tolerance = TOLERANCE[dtype]
    assert (ours - theirs).abs().max() <= tolerance * theirs.abs().max()
    for i, attention in enumerate(out.attentions):
        assert (t[f"dec.{i}.self.weights"] - attention[0].float()).abs().max() <= tolerance
    floats = [n for n in t if isinstance(t.entries[n], torch.Tensor) and t.entries[n].is_floating_point()]
    assert floats and all(t[n].dtype == torch.float32 for n in floats)


@pytest.mark.parametrize("build", [hf_tiny.llama, hf_tiny.gpt2], ids=["llama", "gpt2"])
def test_precision_float32_gives_transformers_float32_numbers(tmp_path, build):
    folder = _folder(tmp_path, build, torch.bfloat16)
    m = attnlab.load(folder)
    t = m.trace(tgt=list(hf_tiny.IDS), options=RunOptions(precision="float32"))
    assert t.options.dtype == "float32"
    out = _hf(folder, torch.float32)  # the same bf16 weights, widened exactly
    assert (t[names.LOGITS] - out.logits[0]).abs().max() <= FP32
    for i, attention in enumerate(out.attentions):
        assert (t[f"dec.{i}.self.weights"] - attention[0]).abs().max() <= FP32


def test_flipping_the_precision_back_gives_the_same_bf16_run(tmp_path):
    folder = _folder(tmp_path, hf_tiny.llama, torch.bfloat16)
    m = attnlab.load(folder)
    before = {k: v.clone() for k, v in m.module.checkpoint_tensors().items()}
    first = m.trace(tgt=list(hf_tiny.IDS))[names.LOGITS]
    m.trace(tgt=list(hf_tiny.IDS), options=RunOptions(precision="float32"))
    again = m.trace(tgt=list(hf_tiny.IDS), options=RunOptions(precision="stored"))
    assert torch.equal(first, again[names.LOGITS])
    after = m.module.checkpoint_tensors()
    assert all(after[k].dtype == torch.bfloat16 and torch.equal(after[k], v) for k, v in before.items())


def test_a_float32_folder_and_the_load_dtype(tmp_path):
    folder = _folder(tmp_path, hf_tiny.gpt2, torch.float32)
    assert {p.dtype for p in attnlab.load(folder).module.parameters()} == {torch.float32}
    m = attnlab.load(folder, dtype="bfloat16")
    assert {p.dtype for p in m.module.parameters()} == {torch.bfloat16}
    out = _hf(folder, torch.bfloat16)
    ours, theirs = m.trace(tgt=list(hf_tiny.IDS))[names.LOGITS], out.logits[0].float()
    assert (ours - theirs).abs().max() <= BF16_LOGITS * theirs.abs().max()
    widened = attnlab.load(_folder(tmp_path, hf_tiny.llama, torch.bfloat16), dtype="float32")
    assert {p.dtype for p in widened.module.parameters()} == {torch.float32}


def test_an_unknown_load_dtype_is_refused_in_one_line(tmp_path):
    folder = _folder(tmp_path, hf_tiny.gpt2, torch.float32)
    with pytest.raises(CheckpointError) as refused:
        attnlab.load(folder, dtype="int8")
    assert "dtype must be one of stored, float32, bfloat16, float16" in str(refused.value)


def test_the_dtype_flag_and_the_lesson_key_come_from_the_option_table():
    from attnlab.commands import trace as trace_command
    from attnlab.engine import option_rules

    parser = trace_command.argparse.ArgumentParser(prog="attnlab trace")
    trace_command.add_arguments(parser)
    args = parser.parse_args(["--src", "x", "--out", "x.npz", "--dtype", "float32"])
    assert trace_command.options_from(args).precision == "float32"
    spec, key = option_rules.lesson_keys()["precision"]
    assert spec.applied(key, RunOptions(), "float32").precision == "float32"
    assert RunOptions(precision="float64").problems(hf_tiny_config()) == [
        "precision must be one of stored, float32 (got 'float64')"
    ]


def hf_tiny_config():
    from attnlab.engine.config import ModelConfig

    return ModelConfig(arch="decoder-only", d_model=16, n_heads=2, d_ff=16, n_decoder_layers=1)
