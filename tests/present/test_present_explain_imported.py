"""Explanations of imported architectures (attnlab.present.explain_imported), Qt-free: the page of each step
follows the model's real computation, and the numbers in it come from the trace."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.present.explain import explanation_html
from attnlab.present.explain_qkv import gqa_text, kv_groups
from attnlab.present.stages import stages_for


def trace_of(**changes):
    torch.manual_seed(0)
    tok = WordTokenizer.train(["the black cat sees the small dog"])
    cfg = ModelConfig(
        arch="decoder-only",
        src_vocab_size=tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=0,
        n_decoder_layers=1,
        max_len=32,
        **changes,
    )
    trace = LiveModel(Transformer(cfg), tok, tok).trace(None, "the black cat", RunOptions())
    return trace, {s.key: s for s in stages_for(trace)}


LLAMA_LIKE = dict(
    positional="rotary",
    rotary_layout="half",
    norm="rmsnorm",
    norm_bias=False,
    ffn="gated",
    activation="silu",
    n_kv_heads=2,
    scale_embedding=False,
    bias=False,
)


def test_kv_groups_and_the_words_count_from_one():
    assert kv_groups(8, 2) == [(0, [0, 1, 2, 3]), (1, [4, 5, 6, 7])]
    assert gqa_text(4, 2) == "K/V head 1 ← Q heads 1, 2 · K/V head 2 ← Q heads 3, 4"
    assert gqa_text(4, 4) == "" and gqa_text(4, 0) == ""


def test_llama_like_pages_name_rms_gate_up_and_the_shared_heads():
    trace, stages = trace_of(**LLAMA_LIKE)
    norm = explanation_html(stages["dec.0.norm1"], trace)
    assert "RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε)" in norm and "No mean is subtracted" in norm
    assert "μ" not in norm  # not LayerNorm's formula
    ffn = explanation_html(stages["dec.0.ffn"], trace)
    t = len(trace["tgt.tokens"])
    assert "W<sub>gate</sub>" in ffn and "W<sub>up</sub>" in ffn and "SiLU" in ffn and f"up [{t} × 64]" in ffn
    qkv = explanation_html(stages["dec.0.self.qkv"], trace)
    assert "4 query heads but only 2 key/value heads" in qkv and gqa_text(4, 2) in qkv and "half-split" in qkv


def test_a_re_split_into_more_heads_changes_the_sharing_words():
    trace, stages = trace_of(**LLAMA_LIKE)
    trace8 = LiveModel(Transformer(trace.config), *[WordTokenizer.train(["the black cat"])] * 2).trace(
        None, "the black cat", RunOptions(n_heads=8)
    )
    assert trace8.n_kv_heads == 4
    assert "K/V head 4 ← Q heads 7, 8" in explanation_html(stages["dec.0.self.qkv"], trace8)


@pytest.mark.parametrize(
    "changes, words",
    [
        (
            dict(type_vocab_size=2, embed_norm=True, positional="learned", pos_offset=2),
            ["token-type", "row 2", "embedding LayerNorm"],
        ),
        (dict(scale_embedding=True), ["√d<sub>model</sub> = 5.7"]),
    ],
)
def test_input_pages_say_what_the_model_adds(changes, words):
    trace, stages = trace_of(**changes)
    html = explanation_html(stages["tgt.input"], trace)
    assert all(w in html for w in words), html


def test_classroom_pages_get_no_imported_words():
    trace, stages = trace_of(scale_embedding=False)
    assert "This model:" not in explanation_html(stages["tgt.input"], trace)
    assert "LayerNorm" in explanation_html(stages["dec.0.norm1"], trace)
