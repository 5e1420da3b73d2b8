"""GPTQ (with act-order, checkpoint formats "gptq" and "gptq_v2") and AWQ (GEMM) folders, built here from the
documented layouts (auto-gptq / GPTQModel's pack: codes along the input, the lowest bits first, zeros along the
output, stored minus one in the "gptq" format; AutoAWQ's pack: codes along the output in the order 0 2 4 6 1 3 5 7),
open in attnlab with every weight equal to scale × (code − zero) of the integers packed, and the model agrees
with transformers' Llama holding those weights."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.errors import CheckpointError, Problems
from attnlab.checkpoints.hf_folder import read_folder_weights
from attnlab.checkpoints.loader import load_checkpoint
from attnlab.checkpoints.quantized import QUANTIZATION_KEY, dequantize_state
from attnlab.engine import names
from attnlab.present import quantization
from tests.support.bnb_folders import IDS, original_folder

GROUP = 32
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ's pack: nibble j of a word holds output AWQ_ORDER[j] of its 8
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def int32(words: torch.Tensor) -> torch.Tensor:
    """Unsigned 32-bit words (int64) as the int32 bits a file stores."""
    return torch.where(words >= 1 << 31, words - (1 << 32), words).to(torch.int32)


def pack_rows(codes: torch.Tensor) -> torch.Tensor:
    """[in, out] 4-bit codes -> [in / 8, out] words: input 8r + j in bits 4j … 4j + 3 of row r."""
    c = codes.to(torch.int64).view(-1, 8, codes.shape[1])
    return int32(sum(c[:, j] << (4 * j) for j in range(8)))


def pack_columns(codes: torch.Tensor, order: list[int]) -> torch.Tensor:
    """[r, c] 4-bit codes -> [r, c / 8] words: nibble j holds column 8w + order[j] of word w."""
    c = codes.to(torch.int64).view(codes.shape[0], -1, 8)
    return int32(sum(c[:, :, order[j]] << (4 * j) for j in range(8)))


def quantize(w: torch.Tensor, groups: torch.Tensor, n_groups: int) -> tuple[torch.Tensor, ...]:
    """Asymmetric 4-bit codes of W [out, in] per (output, group): (codes [in, out], scales float16 [G, out],
    zeros [G, out] in 1 … 15, the weights they stand for [out, in] = scale × (code − zero))."""
    out_f = w.shape[0]
    scales = torch.empty(n_groups, out_f, dtype=torch.float16)
    zeros = torch.empty(n_groups, out_f, dtype=torch.int64)
    for g in range(n_groups):
        cols = w[:, groups == g]  # [out, members]
        low, high = cols.min(dim=1).values.clamp(max=0), cols.max(dim=1).values.clamp(min=0)
        scales[g] = ((high - low) / 15).clamp(min=1e-4).half()
        zeros[g] = (-low / scales[g].float()).round().clamp(1, 15).long()  # "gptq" stores zero − 1: keep it ≥ 0
    s, z = scales.float()[groups].t(), zeros[groups].t()  # [out, in]
    codes = (w / s + z).round().clamp(0, 15).long()  # [out, in]
    return codes.t().contiguous(), scales, zeros, s * (codes - z).float()


def build(root, method: str, fmt: str = "gptq", act_order: bool = True) -> tuple:
    """A GPTQ or AWQ folder of the tiny Llama, and {weight name: the values its codes stand for}."""
    from safetensors.torch import load_file, save_file

    original = original_folder(root)
    state = load_file(original / "model.safetensors")
    expected = {}
    for name in [k for k in state if k.endswith(".weight") and k.split(".")[-2] in LINEARS]:
        w, module = state.pop(name), name.removesuffix("weight")
        n_in = w.shape[1]
        order = torch.randperm(n_in, generator=torch.Generator().manual_seed(n_in)) if act_order else torch.arange(n_in)
        groups = torch.empty(n_in, dtype=torch.int32)
        groups[order] = (torch.arange(n_in) // GROUP).to(torch.int32)  # act-order: groups in another order
        codes, scales, zeros, expected[name] = quantize(w, groups, n_in // GROUP)
        if method == "gptq":
            state[module + "qweight"] = pack_rows(codes)
            state[module + "qzeros"] = pack_columns(zeros - (1 if fmt == "gptq" else 0), list(range(8)))
            state[module + "g_idx"] = groups
        else:
            state[module + "qweight"] = pack_columns(codes, AWQ_ORDER)
            state[module + "qzeros"] = pack_columns(zeros, AWQ_ORDER)
        state[module + "scales"] = scales
    folder = root / f"{method}-{fmt}-{act_order}"
    folder.mkdir()
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((original / "config.json").read_text())
    qc = {"quant_method": method, "bits": 4, "group_size": GROUP}
    qc.update({"desc_act": act_order, "sym": False, "checkpoint_format": fmt} if method == "gptq" else {})
    qc.update({"version": "gemm", "zero_point": True} if method == "awq" else {})
    (folder / "config.json").write_text(json.dumps({**config, "quantization_config": qc}))
    return folder, original, expected


CASES = {"gptq": ("gptq", "gptq", True), "gptq_v2": ("gptq", "gptq_v2", True), "awq": ("awq", "gptq", False)}


@pytest.fixture(scope="module", params=list(CASES))
def folder(request, tmp_path_factory):
    method, fmt, act_order = CASES[request.param]
    return (method, *build(tmp_path_factory.mktemp(request.param), method, fmt, act_order))


def test_every_weight_is_scale_times_code_minus_zero(folder):
    method, path, _original, expected = folder
    problems = Problems(path)
    config = json.loads((path / "config.json").read_text())
    state, record = dequantize_state(read_folder_weights(path, problems), problems, hf_config=config)
    assert not problems.items and record is not None and record.weights == len(expected) == 14
    for name, values in expected.items():
        assert torch.equal(state[name], values), name
    assert record.act_order is (method == "gptq")


def test_the_model_opens_and_agrees_with_transformers(folder):
    from transformers import AutoModelForCausalLM

    method, path, original, expected = folder
    model = load_checkpoint(path)
    said = model.metadata[QUANTIZATION_KEY]["text"]
    assert said.startswith(f"dequantized from {method.upper()} 4-bit (") and f"group size {GROUP}" in said
    assert said.endswith(") to float32") and ("act-order" in said) is (method == "gptq")
    trace = model.trace(tgt=IDS)
    reference = AutoModelForCausalLM.from_pretrained(original).eval()
    missing, _ = reference.load_state_dict(expected, strict=False)
    assert set(missing).isdisjoint(expected)
    with torch.no_grad():
        theirs = reference(trace[names.side_entry("tgt", "ids")].reshape(1, -1)).logits[0]
    assert torch.allclose(trace[names.LOGITS], theirs, atol=1e-4, rtol=0)


def test_the_quantization_view_shows_codes_minus_zeros_and_group_scales(folder):
    _method, path, _original, expected = folder
    meta = load_checkpoint(path).metadata
    name = "model.layers.0.mlp.down_proj.weight"  # [64, 128]: 4 groups of 32 inputs
    view = quantization.quantization_view(meta, name)
    levels, scales, w_hat = (m.matrix for m in view.maps)
    assert scales.shape == (64, 128 // GROUP)
    assert torch.equal(torch.from_numpy(w_hat), expected[name])
    assert float(abs(levels - levels.round()).max()) == 0  # code − zero: whole numbers


def test_a_group_index_out_of_range_is_refused(tmp_path):
    path, _original, _expected = build(tmp_path, "gptq")
    from safetensors.torch import load_file, save_file

    state = load_file(path / "model.safetensors")
    state["model.layers.0.self_attn.q_proj.g_idx"][0] = 99
    save_file(state, path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="g_idx names groups outside"):
        load_checkpoint(path)
