"""LoRA adapter folders (issue 35.1), written by peft in the test on tiny random models: at strength 1 the
logits equal peft's merged model (merge_and_unload), at 0 the base model's bit for bit, and a strength change
re-runs from the first adapted layer only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.engine import names
from attnlab.engine.options import RunOptions
from tests.support.hf_tiny import IDS
from tests.support.lora_tiny import hf_logits, write_adapter

pytest.importorskip("peft")

CASES = {
    "gpt2-c_attn": ("gpt2", {"r": 4, "lora_alpha": 8, "target_modules": ["c_attn"], "fan_in_fan_out": True}),
    "llama-qv": ("llama", {"r": 4, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}),
    "llama-rslora": ("llama", {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "use_rslora": True}),
    "llama-patterns": (
        "llama",
        {
            "r": 4,
            "lora_alpha": 8,
            "target_modules": ["q_proj", "v_proj", "down_proj"],
            "rank_pattern": {"down_proj": 2},
            "alpha_pattern": {"v_proj": 3},
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_strength_one_is_peft_merged_model(tmp_path: Path, case: str) -> None:
    family, lora = CASES[case]
    _base, adapter, merged = write_adapter(tmp_path, family, **lora)
    model = attnlab.load(str(adapter))
    ours = model.trace(tgt=IDS)[names.LOGITS].float()  # [T, V]
    reference = hf_logits(merged, IDS)
    assert (ours - reference).abs().max().item() < 1e-4


@pytest.mark.parametrize("case", ["gpt2-c_attn", "llama-qv"])
def test_strength_zero_is_base_bit_for_bit(tmp_path: Path, case: str) -> None:
    family, lora = CASES[case]
    base, adapter, _merged = write_adapter(tmp_path, family, **lora)
    model = attnlab.load(str(adapter))
    model.trace(tgt=IDS)  # at 1 first: 0 must give the base back after the weights were written
    at_zero = model.trace(tgt=IDS, options=RunOptions(adapter_strength=0.0))[names.LOGITS]
    plain = attnlab.load(str(base)).trace(tgt=IDS)[names.LOGITS]
    assert torch.equal(at_zero, plain)


def test_strength_change_resumes_at_first_adapted_layer(tmp_path: Path) -> None:
    lora = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "layers_to_transform": [1]}
    _base, adapter, merged = write_adapter(tmp_path, "llama", **lora)
    model = attnlab.load(str(adapter))
    assert model.config.adapted_from == "dec.1"
    first = model.trace(tgt=IDS, options=RunOptions(adapter_strength=0.0))
    again = model.trace(tgt=IDS)  # strength 1
    assert again.info.get("resumed_from") == "dec.1"
    kept = [n for n in first.entries if not n.startswith(("dec.1.", "logits", "probs")) and n in again.entries]
    assert kept and all(again.entries[n] is first.entries[n] for n in kept if n.startswith("dec.0."))
    recomputed = [n for n in again.entries if n.startswith("dec.1.") and isinstance(again.entries[n], torch.Tensor)]
    assert recomputed and not any(again.entries[n] is first.entries[n] for n in recomputed)  # (recipes are shared)
    assert (again[names.LOGITS].float() - hf_logits(merged, IDS)).abs().max().item() < 1e-4
    full = attnlab.load(str(adapter)).trace(tgt=IDS)  # a resumed run equals a full one
    assert torch.equal(again[names.LOGITS], full[names.LOGITS])


def test_strength_between_and_beyond_scales_delta(tmp_path: Path) -> None:
    _base, adapter, _merged = write_adapter(tmp_path, "gpt2", **CASES["gpt2-c_attn"][1])
    model = attnlab.load(str(adapter))
    name = "decoder.0.self_attn.w_q.weight"
    weights = {}
    for s in (0.0, 1.0, 2.5):
        model.trace(tgt=IDS, options=RunOptions(adapter_strength=s))
        weights[s] = dict(model.module.named_parameters())[name].detach().clone()
    delta = weights[1.0] - weights[0.0]
    assert torch.allclose(weights[2.5], weights[0.0] + 2.5 * delta, atol=1e-5)
    assert delta.abs().max() > 0


@pytest.mark.parametrize(
    ("saved", "adapted_from"), [("down_proj", "dec.0"), ("embed_tokens", "all"), ("lm_head", "all")]
)
def test_modules_to_save(tmp_path: Path, saved: str, adapted_from: str) -> None:
    """Saved modules replace the base's tensors (ΔW = saved − base); one outside the layers makes a strength
    change a full run (nothing before the first layer can be kept)."""
    lora = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "modules_to_save": [saved]}
    _base, adapter, merged = write_adapter(tmp_path, "llama", **lora)
    model = attnlab.load(str(adapter))
    assert model.config.adapted_from == adapted_from
    ours = model.trace(tgt=IDS)[names.LOGITS].float()
    assert (ours - hf_logits(merged, IDS)).abs().max().item() < 1e-4
    at_zero = model.trace(tgt=IDS, options=RunOptions(adapter_strength=0.0))
    assert ("resumed_from" in at_zero.info) == (adapted_from != "all")
