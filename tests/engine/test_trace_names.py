"""Trace names are an interface: panels, saved traces and other tools look tensors up by them.

The golden files in tests/golden/ pin the exact, ordered name list of four small models. If a change to the
engine changes them on purpose, regenerate with `python -m tests.engine.test_trace_names --regenerate` and say so
in the commit; every other failure is a broken interface.
"""

from __future__ import annotations

import difflib
import gc
import sys
import weakref
from pathlib import Path

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CASES = {  # golden file stem: (config changes, run options)
    "encoder_decoder_post_norm": ({"arch": "encoder-decoder"}, RunOptions()),
    "encoder_decoder_pre_norm": ({"arch": "encoder-decoder", "norm_first": True, "final_norm": True}, RunOptions()),
    "decoder_only": ({"arch": "decoder-only"}, RunOptions()),
    "encoder_only": ({"arch": "encoder-only"}, RunOptions()),
    # what imported architectures add: Llama/Qwen2-like and BERT-like
    "decoder_only_rmsnorm_swiglu_gqa": (
        {
            "arch": "decoder-only",
            "norm": "rmsnorm",
            "ffn": "gated",
            "n_kv_heads": 1,
            "positional": "rotary",
            "rotary_layout": "half",
            "norm_first": True,
            "final_norm": True,
            "activation": "silu",
            "bias": False,
            "qkv_bias": True,
        },
        RunOptions(),
    ),
    # Mixtral-like: a sparse mixture of experts in every layer (router logits … chosen experts … output)
    "decoder_only_moe": (
        {
            "arch": "decoder-only",
            "norm": "rmsnorm",
            "ffn": "gated",
            "n_experts": 3,
            "experts_per_token": 2,
            "positional": "rotary",
            "rotary_layout": "half",
            "norm_first": True,
            "final_norm": True,
            "activation": "silu",
            "bias": False,
        },
        RunOptions(),
    ),
    "encoder_only_bert_like": (
        {
            "arch": "encoder-only",
            "embed_norm": True,
            "type_vocab_size": 2,
            "positional": "learned",
            "pos_offset": 2,
            "output_head": True,
            "logits_bias": True,
            "activation": "gelu",
            "scale_embedding": False,
        },
        RunOptions(),
    ),
    # ALBERT-like (w-bertish): factorised embedding 8 -> 16 ("src.embed_proj"), one layer's weights shared
    "encoder_only_albert_like": (
        {
            "arch": "encoder-only",
            "embed_norm": True,
            "type_vocab_size": 2,
            "positional": "learned",
            "output_head": True,
            "logits_bias": True,
            "activation": "gelu_tanh",
            "scale_embedding": False,
            "embed_dim": 8,
            "share_layers": True,
        },
        RunOptions(),
    ),
}
FAST_PATH_NAMES = {"src.tokens", "src.ids", "tgt.tokens", "tgt.ids", "logits", "probs"}


def model_for(build, case: str) -> LiveModel:
    """`build` is the tiny-model builder of tests/conftest.py (the `tiny_model` fixture)."""
    changes, _ = CASES[case]
    return build(**changes, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2, n_decoder_layers=2, max_len=16)


def trace_for(build, case: str, options: RunOptions | None = None):
    return model_for(build, case).trace("the black cat", "le chat", options or CASES[case][1])


def documented_names(config: ModelConfig) -> set[str]:
    """The names the engine documents (see the shared context: 'Trace ... Names'), built from the config."""
    site_steps = ("q", "k", "v", "scores", "scaled", "mask", "masked", "weights", "context", "concat", "out")
    norm_parts = ("in", "rms", "out") if config.norm == "rmsnorm" else ("in", "mean", "var", "out")
    ffn_parts = ("gate", "up", "hidden", "out") if config.ffn == "gated" else ("pre", "hidden", "out")
    if config.n_experts:  # a mixture of experts records its router instead of one network's hidden units
        ffn_parts = ("router_logits", "router_probs", "chosen", "expert_weights", "out")
    names = {"logits", "probs"}
    if config.arch == "decoder-only":  # the logit lens of a decoder language model
        names |= {"lens.ids", "lens.probs"}
    if config.output_head:
        names |= {"head.pre", "head.hidden"} | {f"head.norm.{p}" for p in norm_parts}
    sides = [("src", "enc", config.n_encoder_layers)] if config.has_encoder else []
    if config.has_decoder:
        sides.append(("tgt", "dec", config.n_decoder_layers))
    for side, stack, n_layers in sides:
        names |= {f"{side}.tokens", f"{side}.ids", f"{side}.embed", f"{side}.input", f"{stack}.out"}
        if config.positional in ("sinusoidal", "learned"):
            names.add(f"{side}.pos")
        if config.type_vocab_size:
            names.add(f"{side}.type")
        if config.embed_norm:
            names |= {f"{side}.embed_norm.{p}" for p in norm_parts}
        if config.embed_dim:
            names.add(f"{side}.embed_proj")
        if config.final_norm:
            names |= {f"{stack}.norm.{p}" for p in norm_parts}
        cross = stack == "dec" and config.has_encoder
        n_sub = 3 if cross else 2
        for layer in range(n_layers):
            prefix = f"{stack}.{layer}"
            kinds = ["self", "cross"] if cross else ["self"]
            names |= {f"{prefix}.{kind}.{step}" for kind in kinds for step in site_steps}
            names |= {f"{prefix}.resid{n}" for n in range(1, n_sub + 1)}
            names |= {f"{prefix}.norm{n}.{p}" for n in range(1, n_sub + 1) for p in norm_parts}
            names |= {f"{prefix}.ffn.{p}" for p in ffn_parts} | {f"{prefix}.out"}
    return names


def read_golden(case: str) -> list[str]:
    return (GOLDEN / f"trace_names_{case}.txt").read_text(encoding="utf-8").split()


@pytest.mark.parametrize("case", list(CASES))
def test_trace_names_match_golden_in_order(case, tiny_model):
    names, golden = trace_for(tiny_model, case).names(), read_golden(case)
    if names != golden:
        diff = "\n".join(difflib.unified_diff(golden, names, "golden", "engine now", lineterm="", n=2))
        pytest.fail(f"trace names of {case} changed (regenerate only if that was the intent):\n{diff}")


@pytest.mark.parametrize("case", list(CASES))
def test_every_documented_name_is_there_and_nothing_else(case, tiny_model):
    model = model_for(tiny_model, case)
    names = set(trace_for(tiny_model, case).names())
    expected = documented_names(model.config)
    assert not expected - names, f"documented but missing: {sorted(expected - names)}"
    assert not names - expected, f"recorded but undocumented: {sorted(names - expected)}"


@pytest.mark.parametrize("case", list(CASES))
def test_golden_files_hold_the_documented_names(case, tiny_model):
    """The golden lists themselves were checked against the documentation, not only against the engine."""
    golden = read_golden(case)
    assert len(golden) == len(set(golden))
    assert set(golden) == documented_names(model_for(tiny_model, case).config)


def test_grouped_query_attention_records_kv_heads_and_which_q_heads_share_them(tiny_model):
    trace = trace_for(tiny_model, "decoder_only_rmsnorm_swiglu_gqa")
    T = len(trace["tgt.tokens"])
    assert trace["dec.0.self.q"].shape == (2, T, 8) and trace["dec.0.self.k"].shape == (1, T, 8)
    assert trace["dec.0.self.v"].shape == (1, T, 8) and trace["dec.0.self.weights"].shape == (2, T, T)
    assert (trace.n_kv_heads, trace.kv_head_map) == (1, [0, 0])
    resplit = trace_for(tiny_model, "decoder_only_rmsnorm_swiglu_gqa", RunOptions(n_heads=4))
    assert resplit["dec.0.self.k"].shape == (2, T, 4) and resplit.kv_head_map == [0, 0, 1, 1]
    # Q heads 0 and 1 read the same keys: their scores are their own queries against one K head
    q, k = resplit["dec.0.self.q"], resplit["dec.0.self.k"]
    assert torch.allclose(resplit["dec.0.self.scores"][1], q[1] @ k[0].T, atol=1e-5)
    assert torch.allclose(resplit["dec.0.self.scores"][2], q[2] @ k[1].T, atol=1e-5)
    assert trace_for(tiny_model, "decoder_only").kv_head_map == [0, 1]


def test_position_names_follow_the_positional_switch(tiny_model):
    rotary = trace_for(tiny_model, "encoder_decoder_post_norm", RunOptions(positional=False))
    assert "src.pos" not in rotary and "tgt.pos" not in rotary and "src.input" in rotary


@pytest.mark.parametrize("case", list(CASES))
def test_fast_path_trace_holds_only_tokens_ids_logits_probs(case, tiny_model):
    names = set(trace_for(tiny_model, case, RunOptions(record=False)).names())
    assert {"logits", "probs"} <= names <= FAST_PATH_NAMES


def test_a_dropped_recording_is_freed_at_once(tiny_model):
    """No reference cycle may keep a run's intermediates alive until the garbage collector happens by:
    a big model's recording is hundreds of MB."""
    model = model_for(tiny_model, "encoder_decoder_post_norm").module
    gc.disable()
    try:
        rec = Recorder(True)
        with torch.inference_mode():
            model(torch.tensor([[5, 6, 7]]), torch.tensor([[1, 8]]), rec=rec)
        kept = [weakref.ref(rec._items[name]) for name in ("enc.0.self.q", "dec.0.ffn.pre", "dec.0.self.mask")]
        del rec
        assert all(ref() is None for ref in kept)  # stored tensors (derived rules are shared, built once)
    finally:
        gc.enable()


def regenerate() -> None:
    from tests.support.tiny import build_tiny_model  # run as a script: tests/ is on sys.path

    GOLDEN.mkdir(exist_ok=True)
    for case in CASES:
        names = trace_for(build_tiny_model, case).names()
        (GOLDEN / f"trace_names_{case}.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
        print(f"wrote {len(names)} names for {case}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python -m tests.engine.test_trace_names --regenerate")
    regenerate()
