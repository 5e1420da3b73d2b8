"""Rope settings are read with transformers' own precedence (issue 38.5): a config.json with both rope_parameters
and rope_scaling runs what transformers runs (rope_scaling replaces rope_parameters whole), for every family that
reads rope settings; what attnlab cannot compute there (longrope, Phi-3's su / yarn) is refused in one line.
The reference is transformers' config classes (their standardised rope_parameters) and its eager forward."""

from __future__ import annotations

import copy
import json
import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers")

import attnlab  # noqa: E402
from attnlab.checkpoints.errors import CheckpointError  # noqa: E402
from attnlab.checkpoints.hf import config_from_hf  # noqa: E402
from attnlab.checkpoints.hf.rope import ROPE_TYPES  # noqa: E402
from tests.support.hf_tiny import IDS, llama  # noqa: E402

FAMILIES = [
    "llama", "mistral", "qwen2", "mixtral", "phi", "stablelm", "gpt_neox", "phi3",
    "falcon", "gemma", "gemma2", "gemma3_text", "qwen3", "olmo", "olmo2",
]  # fmt: skip
PARTIAL = {"phi", "stablelm", "gpt_neox"}  # the families attnlab turns only part of each head for
LINEAR, YARN4 = {"rope_type": "linear", "factor": 2.0}, {"rope_type": "yarn", "factor": 4.0}
CASES = {
    "both": {"rope_parameters": {"rope_type": "default", "rope_theta": 500.0}, "rope_scaling": LINEAR},
    "both, old spelling, top-level theta": {
        "rope_theta": 700.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        "rope_scaling": {"type": "linear", "factor": 2.0},
    },
    "empty rope_scaling": {"rope_parameters": {**LINEAR, "rope_theta": 500.0, "factor": 3.0}, "rope_scaling": {}},
    "type and rope_type": {"rope_scaling": {"type": "linear", "rope_type": "dynamic", "factor": 2.0}},
    "old type only": {"rope_scaling": {"type": "linear", "factor": 2.0}},
    "yarn, top-level original length": {
        "original_max_position_embeddings": 8,
        "rope_parameters": {**YARN4, "rope_theta": 500.0, "original_max_position_embeddings": 16},
    },
    "llama3 in rope_scaling": {
        "rope_parameters": {"rope_type": "default", "rope_theta": 300.0},
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    },
    "longrope in rope_scaling": {
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4},
    },
    "yarn in rope_scaling": {"rope_scaling": {"type": "yarn", "factor": 2.0}},
    "top-level partial": {"partial_rotary_factor": 0.5, "rope_parameters": {"rope_type": "default"}},
    "nothing": {},
    "top-level theta only": {"rope_theta": 123.0},
    "dict without theta, top-level theta": {"rope_theta": 123.0, "rope_parameters": {"rope_type": "default"}},
    "old GPT-NeoX names": {"rotary_pct": 0.5, "rotary_emb_base": 321.0},
}  # fmt: skip


def family_dict(model_type: str) -> dict:
    """A tiny config.json of `model_type` as transformers writes it, with every rope field taken out."""
    cls = transformers.CONFIG_MAPPING[model_type]
    sizes = dict(vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4)
    extra = {"head_dim": 8} if "gemma" in model_type else {}
    d = cls(**sizes, num_key_value_heads=2, max_position_embeddings=32, **extra).to_dict()
    rope_keys = ("rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "rotary_pct")
    return {k: v for k, v in d.items() if k not in (*rope_keys, "rotary_emb_base", "original_max_position_embeddings")}


def transformers_rope(hf: dict) -> tuple[dict, dict | None] | None:
    """(the global layers' standardised rope_parameters, the local layers' or None) as transformers reads `hf`;
    None where transformers refuses the config."""
    cls = transformers.CONFIG_MAPPING[hf["model_type"]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = cls.from_dict(copy.deepcopy(hf))
            config.standardize_rope_params()  # as the rotary embedding does when it is built
    except Exception:  # any refusal of transformers: its validators raise kinds of their own
        return None
    rope = config.rope_parameters
    if "full_attention" in rope:
        return rope["full_attention"], rope["sliding_attention"]
    return rope, None


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("model_type", FAMILIES)
def test_rope_settings_follow_transformers_precedence(model_type, case):
    hf = {**family_dict(model_type), **CASES[case]}
    expected = transformers_rope(hf)
    fraction = 1.0 if expected is None else expected[0].get("partial_rotary_factor", 1.0)
    if (
        expected is None
        or expected[0]["rope_type"] not in ROPE_TYPES
        or (fraction != 1.0 and model_type not in PARTIAL)
        or (expected[1] is not None and expected[1].get("partial_rotary_factor", 1.0) != 1.0)
    ):
        with pytest.raises(CheckpointError) as refused:
            config_from_hf(copy.deepcopy(hf))
        assert "\n" not in str(refused.value)
        return
    rope, local = expected
    config = config_from_hf(copy.deepcopy(hf))
    assert config.rope_theta == rope["rope_theta"]
    assert config.rotary_fraction == fraction
    assert config.rope_scaling == ("none" if rope["rope_type"] == "default" else rope["rope_type"])
    if config.rope_scaling != "none":
        assert config.rope_factor == rope.get("factor") or config.rope_scaling == "yarn"
    if config.rope_scaling in ("yarn", "llama3"):
        assert config.rope_original_max_len == rope["original_max_position_embeddings"]
    if local is not None:
        assert config.rope_local_theta == local["rope_theta"]


def test_both_rope_fields_in_a_saved_folder_give_transformers_logits(tmp_path):
    """The defect as measured: rope_parameters (plain, base 500) beside rope_scaling (linear ×2); transformers
    applies rope_scaling."""
    model, _ = llama()
    model.save_pretrained(str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    config.update(rope_scaling={"rope_type": "linear", "factor": 2.0}, rope_theta=500.0)
    (tmp_path / "config.json").write_text(json.dumps(config))
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), attn_implementation="eager")
    with torch.no_grad():
        expected = reference.eval()(torch.tensor([IDS])).logits[0]  # [T, V]
    logits = attnlab.load(tmp_path).trace(tgt=IDS)["logits"]  # [T, V]
    assert (logits - expected).abs().max().item() <= 1e-5


def test_longrope_in_rope_scaling_beside_plain_rope_parameters_is_refused_in_one_line(tmp_path):
    hf = {**family_dict("llama"), **CASES["longrope in rope_scaling"]}
    with pytest.raises(CheckpointError, match="rope_scaling.*longrope") as refused:
        config_from_hf(hf)
    assert "\n" not in str(refused.value)
