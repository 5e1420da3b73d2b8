"""Plain dot-product attention (RunOptions(projections=False)): Q = K = V = the sub-layer's input split into
the heads' slices (cross-attention: K = V = the encoder output), no W_O. Checked against a direct computation
with torch's own scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F

from attnlab.engine.options import RunOptions

SRC, TGT = "the black cat sees the small dog", "le chat noir"


def split(x, n_heads):
    """x [T, d] -> [H, T, d/H]"""
    T, d = x.shape
    return x.reshape(T, n_heads, d // n_heads).transpose(0, 1)


def direct(x_q, x_kv, n_heads, mask=None):
    """softmax(x_q x_kvᵀ / √dk) x_kv per head slice, heads side by side: [Tq, d]."""
    q, kv = split(x_q, n_heads), split(x_kv, n_heads)
    context = F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask)  # [H, Tq, dk]
    return context.transpose(0, 1).reshape(x_q.shape)


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", seed=2)


@pytest.mark.parametrize("n_heads", [None, 1, 8])
def test_self_attention_without_projections_is_x_attending_to_itself(model, n_heads):
    t = model.trace(SRC, TGT, RunOptions(projections=False, norm="pre", n_heads=n_heads))
    H = t.n_heads
    x = t["enc.0.norm1.out"]  # [S, d]: what the sub-layer reads (pre-norm)
    torch.testing.assert_close(t["enc.0.self.q"], split(x, H))
    torch.testing.assert_close(t["enc.0.self.scores"], split(x, H) @ split(x, H).transpose(-2, -1))
    torch.testing.assert_close(t["enc.0.self.out"], direct(x, x, H))
    torch.testing.assert_close(t["enc.0.self.out"], t["enc.0.self.concat"])  # no W_O


def test_causal_self_attention_and_cross_attention_without_projections(model):
    t = model.trace(SRC, TGT, RunOptions(projections=False, norm="pre"))
    H = t.n_heads
    y = t["dec.0.norm1.out"]  # [T, d]
    causal = torch.ones(y.shape[0], y.shape[0], dtype=torch.bool).tril()
    torch.testing.assert_close(t["dec.0.self.out"], direct(y, y, H, causal))
    memory = t["enc.out"]  # [S, d]: K = V = the encoder output
    h = t["dec.0.norm2.out"]
    torch.testing.assert_close(t["dec.0.cross.k"], split(memory, H))
    torch.testing.assert_close(t["dec.0.cross.out"], direct(h, memory, H))


def test_projections_off_changes_the_output_and_the_fast_path_agrees(model):
    on, off = model.trace(SRC, TGT), model.trace(SRC, TGT, RunOptions(projections=False))
    assert not torch.allclose(on["logits"], off["logits"])
    fast = model.trace(SRC, TGT, RunOptions(projections=False, record=False))
    torch.testing.assert_close(fast["logits"], off["logits"], rtol=1e-4, atol=1e-5)


def test_projections_off_on_a_decoder_only_rotary_gqa_model(tiny_model):
    m = tiny_model("decoder-only", seed=1, positional="rotary", n_kv_heads=2)
    t = m.trace("the black cat", None, RunOptions(projections=False))
    assert t["dec.0.self.k"].shape == t["dec.0.self.q"].shape  # x has every head: no K/V sharing
    assert t.n_kv_heads == t.n_heads and t.kv_head_map == list(range(t.n_heads))
    assert torch.isfinite(t["logits"]).all()


def test_projections_must_be_a_bool(model):
    assert "projections must be True or False" in RunOptions(projections="no").problems(model.config)[0]
