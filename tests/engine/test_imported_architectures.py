"""The engine pieces imported architectures need, each against a reference nobody here wrote (PyTorch's
functions, `transformers`' own modules), plus config validation and the native round trip of such models."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from attnlab.checkpoints import load_checkpoint, save_checkpoint
from attnlab.checkpoints.assemble import generic_tokenizer
from attnlab.engine.config import ModelConfig
from attnlab.engine.ffn import ACTIVATION_FUNCTIONS
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.norms import RMSNorm
from attnlab.engine.options import RunOptions
from attnlab.engine.positional import apply_rotary, rotary_angles, sinusoidal_table
from attnlab.engine.trace import Recorder
from tests.support.recorded import finished

LLAMA_LIKE = dict(
    arch="decoder-only",
    d_model=32,
    n_heads=4,
    n_kv_heads=2,
    d_ff=48,
    n_decoder_layers=2,
    norm="rmsnorm",
    ffn="gated",
    activation="silu",
    positional="rotary",
    rotary_layout="half",
    rope_theta=500.0,
    norm_first=True,
    final_norm=True,
    bias=False,
    qkv_bias=True,
    tie_output=False,
    max_len=16,
    src_vocab_size=40,
    tgt_vocab_size=40,
)
BERT_LIKE = dict(
    arch="encoder-only",
    d_model=32,
    n_heads=4,
    d_ff=48,
    n_encoder_layers=2,
    activation="gelu",
    positional="learned",
    pos_offset=2,
    embed_norm=True,
    type_vocab_size=2,
    output_head=True,
    logits_bias=True,
    scale_embedding=False,
    layer_norm_eps=1e-12,
    max_len=16,
    src_vocab_size=40,
    tgt_vocab_size=40,
)


def test_rmsnorm_is_torchs_rms_norm_and_records_the_rms():
    torch.manual_seed(0)
    norm = RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.normal_()
    x = torch.randn(1, 5, 16) * 3
    rec = Recorder(True)
    out = norm(x, rec, "dec.0.norm1")
    torch.testing.assert_close(out, F.rms_norm(x, (16,), norm.weight, eps=1e-6))
    torch.testing.assert_close(finished(rec)["dec.0.norm1.rms"], x[0].pow(2).mean(-1).add(1e-6).sqrt())


def test_activations_are_the_published_formulas():
    x = torch.linspace(-6, 6, 101)
    gpt2_gelu_new = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))
    torch.testing.assert_close(ACTIVATION_FUNCTIONS["gelu_tanh"](x), gpt2_gelu_new)
    torch.testing.assert_close(ACTIVATION_FUNCTIONS["silu"](x), x * torch.sigmoid(x))


def test_half_rotary_is_transformers_rotate_half():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    torch.manual_seed(0)
    T, dk, theta = 7, 8, 500.0
    q, k = torch.randn(1, 2, T, dk), torch.randn(1, 2, T, dk)
    cos, sin = rotary_angles(T, dk, theta=theta)  # [T, dk/2]
    hf_cos, hf_sin = torch.cat([cos, cos], -1)[None], torch.cat([sin, sin], -1)[None]  # HF's [1, T, dk] tables
    theirs_q, theirs_k = llama.apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
    torch.testing.assert_close(apply_rotary(q, cos, sin, "half"), theirs_q)
    torch.testing.assert_close(apply_rotary(k, cos, sin, "half"), theirs_k)
    # and HF's own angles for this theta are ours
    inv_freq = 1.0 / theta ** (torch.arange(0, dk, 2).float() / dk)
    torch.testing.assert_close(cos, torch.outer(torch.arange(T).float(), inv_freq).cos())


@pytest.mark.parametrize("d_model", [16, 15])
def test_marian_sinusoids_are_transformers_table(d_model):
    marian = pytest.importorskip("transformers.models.marian.modeling_marian")
    theirs = marian.MarianSinusoidalPositionalEmbedding(20, d_model).create_weight()
    torch.testing.assert_close(sinusoidal_table(20, d_model, "marian"), theirs)


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"norm": "batchnorm"}, "norm must be one of"),
        ({"ffn": "moe"}, "ffn must be one of"),
        ({"activation": "tanh"}, "activation must be one of"),
        ({"n_heads": 4, "n_kv_heads": 3}, "not a multiple of n_kv_heads"),
        ({"n_kv_heads": -1}, "n_kv_heads must be 0 or more"),
        ({"rope_theta": 0.0}, "rope_theta must be a positive number"),
        ({"rotary_layout": "spiral"}, "rotary_layout must be one of"),
        ({"qkv_bias": "yes"}, "qkv_bias has the wrong type"),
    ],
)
def test_new_config_fields_are_validated(changes, fragment):
    problems = ModelConfig(**changes).problems()
    assert any(fragment in p for p in problems), problems


def test_old_config_json_still_loads_with_the_old_meaning():
    old = ModelConfig(bias=False, tie_output=False)
    data = {
        f.name: getattr(old, f.name)
        for f in dataclasses.fields(ModelConfig)
        if f.name in ("arch", "bias", "tie_output", "d_model", "n_heads")
    }
    config = ModelConfig.from_dict(data)
    assert not any(config.has_bias(part) for part in ("qkv", "attn_out", "ffn", "logits"))
    assert ModelConfig().has_bias("logits") is False  # tied: no logit bias, as before
    assert ModelConfig(tie_output=False).has_bias("logits") is True


@pytest.mark.parametrize("fields", [LLAMA_LIKE, BERT_LIKE], ids=["llama-like", "bert-like"])
def test_imported_architecture_survives_the_native_format(fields, tmp_path):
    config = ModelConfig(**fields)
    torch.manual_seed(0)
    tok = generic_tokenizer(config.out_vocab_size)
    model = LiveModel(Transformer(config), tok, tok, name="imported")
    path = tmp_path / "m.safetensors"
    save_checkpoint(model, path)
    again = load_checkpoint(path)
    assert again.config == config
    before, after = model.trace("tok5 tok6 tok7"), again.trace("tok5 tok6 tok7")
    assert before.names() == after.names()
    torch.testing.assert_close(before["logits"], after["logits"])


def test_a_qwen2_like_bias_layout_builds_the_right_parameters():
    module = Transformer(ModelConfig(**LLAMA_LIKE))
    names = set(dict(module.named_parameters()))
    assert "decoder.0.self_attn.w_q.bias" in names and "decoder.0.self_attn.w_o.bias" not in names
    assert "decoder.0.ffn.gate.bias" not in names and "out_proj.bias" not in names
    assert module.decoder[0].self_attn.w_k.weight.shape == (16, 32)  # 2 K/V heads of 8
    assert "decoder.0.norm1.bias" not in names  # RMSNorm has no bias


def test_embedding_norm_type_and_offset_positions_are_applied():
    config = ModelConfig(**BERT_LIKE)
    torch.manual_seed(0)
    module = Transformer(config).eval()
    ids = torch.tensor([[4, 9, 11]])
    rec = Recorder(True)
    with torch.inference_mode():
        module(ids, options=RunOptions(), rec=rec)
    trace = finished(rec, config)
    summed = module.src_embed.weight[[4, 9, 11]] + module.src_type_embed.weight[0] + module.src_pos.weight[2:5]
    torch.testing.assert_close(trace["src.embed_norm.in"], summed)
    expected = F.layer_norm(summed, (32,), module.src_embed_norm.weight, module.src_embed_norm.bias, 1e-12)
    torch.testing.assert_close(trace["src.input"], expected)
