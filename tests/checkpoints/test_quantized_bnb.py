"""bitsandbytes folders (4-bit nf4 / fp4, with and without double quantization; 8-bit LLM.int8), written in the
tests by transformers + bitsandbytes on the CPU (tests/support/bnb_folders.py), open in attnlab dequantized by the
format's own formulas: every weight equals bitsandbytes' own dequantization bit for bit in float32, the model
traces, and its logits agree with transformers running the same folder."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("bitsandbytes")

from attnlab.checkpoints.errors import CheckpointError, Problems
from attnlab.checkpoints.hf_folder import read_folder_weights
from attnlab.checkpoints.loader import load_checkpoint
from attnlab.checkpoints.quantized import QUANTIZATION_KEY, dequantize_state
from attnlab.engine import names
from tests.support.bnb_folders import (
    IDS,
    SCHEMES,
    bnb_dequantized,
    original_folder,
    quantized_folder,
    transformers_quantized,
)

pytestmark = pytest.mark.filterwarnings("ignore")  # bitsandbytes' CPU notices


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("bnb")
    original = original_folder(root)
    return original, {scheme: quantized_folder(original, root, scheme) for scheme in SCHEMES}


def ours(folder):
    problems = Problems(folder)
    state, record = dequantize_state(read_folder_weights(folder, problems), problems)
    assert not problems.items and record is not None
    return state, record


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_every_weight_equals_bitsandbytes_dequantization_bit_for_bit(folders, scheme):
    folder = folders[1][scheme]
    reference = bnb_dequantized(transformers_quantized(folder))
    state, record = ours(folder)
    assert len(reference) == record.weights == 14  # 2 layers × (q, k, v, o, gate, up, down); lm_head stays float
    for name, theirs in reference.items():
        assert state[name].dtype == torch.float32
        assert torch.equal(state[name], theirs.float()), name


@pytest.mark.parametrize("scheme", ["nf4-double", "int8"])
def test_model_opens_traces_and_agrees_with_transformers(folders, scheme):
    """The reference: transformers' Llama holding bitsandbytes' dequantized weights (transformers' own CPU forward
    of a bitsandbytes layer computes in bfloat16, or rounds its input to int8, so it is no float32 reference)."""
    from transformers import AutoModelForCausalLM

    original, quantized = folders[0], folders[1][scheme]
    model = load_checkpoint(quantized)
    trace = model.trace(tgt=IDS)
    ids = trace[names.side_entry("tgt", "ids")].reshape(1, -1)
    reference = AutoModelForCausalLM.from_pretrained(original).eval()
    dequantized = bnb_dequantized(transformers_quantized(quantized))
    missing, _unexpected = reference.load_state_dict({k: v.float() for k, v in dequantized.items()}, strict=False)
    assert set(missing).isdisjoint(dequantized)
    with torch.no_grad():
        theirs = reference(ids).logits[0]
        plain = AutoModelForCausalLM.from_pretrained(original).eval()(ids).logits[0]
    assert torch.allclose(trace[names.LOGITS], theirs, atol=1e-4, rtol=0)
    assert float((trace[names.LOGITS] - plain).abs().max()) > 1e-2  # and the quantization did change the model


def test_provenance_banner_and_notes_say_what_was_done(folders):
    model = load_checkpoint(folders[1]["nf4-double"])
    fact = model.metadata[QUANTIZATION_KEY]
    qc = json.loads((folders[1]["nf4-double"] / "config.json").read_text())["quantization_config"]
    assert fact["scheme"] == qc["bnb_4bit_quant_type"] == "nf4"
    assert fact["double_quantization"] is qc["bnb_4bit_use_double_quant"] is True
    # 4 bits a weight + an 8-bit absmax per 64 weights + a float32 per 256 blocks (or fewer, at a weight's end)
    d, f, kv = 64, 128, 32  # the tiny Llama's q/o [d, d], k/v [kv, d], gate/up [f, d], down [d, f]
    sizes = [d * d, kv * d, kv * d, d * d, f * d, f * d, d * f]
    bits = sum(4 * n + 8 * (n // 64) + 32 * -(-(n // 64) // 256) for n in sizes) / sum(sizes)
    assert fact["bits_per_weight"] == pytest.approx(bits, abs=1e-3)
    text = "dequantized from bitsandbytes nf4 (4.13 bits per weight, double quantization) to float32"
    assert fact["text"] == text
    assert text in model.metadata["notice"]  # the banner
    assert any(text in note.lower() for note in model.metadata["notices"])  # Model info's notes from loading


def test_plain_four_bit_counts_a_float32_absmax_per_block(folders):
    _state, record = ours(folders[1]["fp4"])
    assert (record.scheme, record.nested, record.blocksize) == ("fp4", False, 64)
    assert record.bits == pytest.approx(4 + 32 / 64)


def test_dequantized_into_the_precision_asked_for(folders):
    model = load_checkpoint(folders[1]["nf4"], dtype="bfloat16")
    assert model.metadata[QUANTIZATION_KEY]["dequantized_to"] == "bfloat16"
    reference = bnb_dequantized(transformers_quantized(folders[1]["nf4"]))
    q = reference["model.layers.1.self_attn.q_proj.weight"]
    held = dict(model.module.named_parameters())
    assert any(p.dtype == torch.bfloat16 and p.shape == q.shape and torch.equal(p, q.bfloat16()) for p in held.values())


def test_a_model_quantized_from_float16_dequantizes_to_the_same_float16_values(tmp_path):
    original = original_folder(tmp_path, torch.float16)
    folder = quantized_folder(original, tmp_path, "nf4-double")
    reference = bnb_dequantized(transformers_quantized(folder))
    state, _record = ours(folder)
    for name, theirs in reference.items():
        assert theirs.dtype == torch.float16
        assert torch.equal(state[name].half(), theirs), name


def test_rows_that_split_a_block_follow_the_flat_layout(tmp_path):
    """A row of 96 weights with 64-weight blocks: blocks run on across rows (bitsandbytes' quantize_4bit flattens
    the weight). bitsandbytes' reference PyTorch kernel reads it so; its compiled CPU kernel (0.50.2) reads blocks
    per row and gets other values, so the reference here is the PyTorch kernel, and the original weights."""
    default_ops = pytest.importorskip("bitsandbytes.backends.default.ops")
    from bitsandbytes.backends.utils import _get_4bit_code

    original = original_folder(tmp_path, intermediate=96)
    folder = quantized_folder(original, tmp_path, "nf4")
    state, _record = ours(folder)
    stored = read_folder_weights(folder, Problems(folder))
    name = "model.layers.0.mlp.down_proj.weight"  # [64, 96]
    code = _get_4bit_code("nf4", torch.device("cpu"))
    theirs = default_ops._dequantize_4bit_compute(
        stored[name].reshape(-1), stored[name + ".absmax"], code, 64, (64, 96), torch.float32
    )
    assert torch.equal(state[name], theirs)
    w = read_folder_weights(original, Problems(original))[name]
    absmax = stored[name + ".absmax"].repeat_interleave(64)[: w.numel()].view_as(w)
    gap = float(torch.diff(code.sort().values).max())  # NF4's widest step between levels
    assert bool(((state[name] - w).abs() <= absmax * gap / 2 + 1e-6).all())


@pytest.mark.parametrize(
    ("quantization", "named"),
    [
        ({"quant_method": "hqq", "nbits": 4}, "HQQ-quantized checkpoints are not supported"),
        ({"quant_method": "quanto", "weights": "int4"}, "Quanto-quantized checkpoints are not supported"),
        ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "GPTQ-quantized checkpoints like this one"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"}, "AWQ-quantized checkpoints like"),
    ],
)
def test_other_methods_are_refused_in_one_line_naming_the_method(folders, tmp_path, quantization, named):
    folder = tmp_path / "other"
    folder.mkdir()
    config = json.loads((folders[0] / "config.json").read_text())
    config["quantization_config"] = quantization
    (folder / "config.json").write_text(json.dumps(config))  # no weights: refused before they are looked for
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(folder)
    assert "\n" not in str(e.value) and named in str(e.value)


def _rewrite(folder, target, change):
    """A copy of `folder` whose safetensors tensors went through `change(state)`."""
    from safetensors.torch import load_file, save_file

    target.mkdir()
    for f in folder.iterdir():
        if f.suffix != ".safetensors":
            (target / f.name).write_bytes(f.read_bytes())
    state = load_file(folder / "model.safetensors")
    change(state)
    save_file(state, target / "model.safetensors", metadata={"format": "pt"})
    return target


def _lying_state(state):
    key = next(k for k in state if k.endswith("quant_state.bitsandbytes__nf4"))
    qs = json.loads(bytes(state[key].tolist()))
    qs["shape"] = [10**7, 10**7]
    state[key] = torch.tensor(list(json.dumps(qs).encode()), dtype=torch.uint8)


def _short_absmax(state):
    key = next(k for k in state if k.endswith(".absmax"))
    state[key] = state[key][:-1].clone()


@pytest.mark.parametrize("change", [_lying_state, _short_absmax])
def test_a_lying_quant_state_is_refused_before_computing(folders, tmp_path, change):
    folder = _rewrite(folders[1]["nf4"], tmp_path / "bad", change)
    with pytest.raises(CheckpointError, match="bitsandbytes weight cannot be read"):
        load_checkpoint(folder)


def test_the_memory_budget_counts_the_dequantized_size(folders, monkeypatch):
    """The nf4 folder's weights fit 250 kB as stored, not dequantized to float32: refused before dequantizing."""
    from attnlab.engine import memory

    folder = folders[1]["nf4-double"]
    stored = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    model = load_checkpoint(folder)
    dequantized = 4 * sum(t.numel() for t in model.module.checkpoint_tensors().values())  # float32 bytes
    room = 250_000
    assert stored < room < dequantized
    monkeypatch.setattr(memory, "host_available", lambda: room)
    with pytest.raises(CheckpointError, match="dequantized, the weights need") as e:
        load_checkpoint(folder)
    assert "float32" in str(e.value)
