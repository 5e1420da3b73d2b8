"""The engine against references nobody on the team wrote: PyTorch's own Transformer modules and kernels.

Our weights are copied into torch.nn modules (our separate W_Q/W_K/W_V become nn.MultiheadAttention's packed
in_proj [3d, d]); then every layer output and every head's attention weights must agree. The eval-mode fast
path of nn.TransformerEncoderLayer skips the attention sub-module (and so our hooks), so it is switched off
for the per-head comparisons and checked separately for outputs only.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.engine.config import ModelConfig
from attnlab.engine.layers import LayerNorm, MultiHeadAttention, attention_steps
from attnlab.engine.model import RunContext, Transformer, build_mask
from attnlab.engine.options import RunOptions
from attnlab.engine.positional import apply_rotary, rotary_angles, sinusoidal_table
from attnlab.engine.trace import Recorder
from tests.support.recorded import finished

TOL = 1e-5
V, D, H, FF = 40, 32, 4, 64
# nn.Transformer announces that it skips nested tensors for pre-norm layers; nothing to act on here
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")


@pytest.fixture(autouse=True)
def no_mha_fast_path():
    """Make nn.MultiheadAttention and nn.TransformerEncoderLayer take their plain path (it calls hooks)."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(before)


# ---- our model, and converters to torch.nn ------------------------------------------------------------
def our_model(norm_first=False, activation="relu", final_norm=False, layers=2, seed=0) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(
        src_vocab_size=V,
        tgt_vocab_size=V,
        d_model=D,
        n_heads=H,
        d_ff=FF,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        activation=activation,
        norm_first=norm_first,
        final_norm=final_norm,
        max_len=32,
    )
    model = Transformer(cfg).eval()
    with torch.no_grad():  # LayerNorms start at gamma=1, beta=0, which would hide a swapped or skipped norm
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn_like(p) * 0.3 + (1.0 if name.endswith("weight") else 0.0))
    return model


def record(model, src_ids, tgt_ids, options: RunOptions | None = None, **pads) -> dict:
    """Our trace (first sequence of the batch) as name -> tensor."""
    options = options or RunOptions()
    rec = Recorder(True)
    with torch.inference_mode():
        model(src_ids, tgt_ids, options=options, rec=rec, **pads)
    return finished(rec, model.config, options)


@torch.no_grad()
def load_mha(theirs: nn.MultiheadAttention, ours: MultiHeadAttention) -> nn.MultiheadAttention:
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))  # [3d, d]
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))  # [3d]
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)
    return theirs


@torch.no_grad()
def load_norm(theirs: nn.LayerNorm, ours: LayerNorm) -> None:
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


def torch_encoder_layer(ours, cfg: ModelConfig, norm_first: bool) -> nn.TransformerEncoderLayer:
    theirs = nn.TransformerEncoderLayer(
        D,
        H,
        FF,
        dropout=0.0,
        activation=cfg.activation,
        batch_first=True,
        layer_norm_eps=cfg.layer_norm_eps,
        norm_first=norm_first,
    )
    load_mha(theirs.self_attn, ours.self_attn)
    theirs.linear1.load_state_dict(ours.ffn.lin1.state_dict())
    theirs.linear2.load_state_dict(ours.ffn.lin2.state_dict())
    load_norm(theirs.norm1, ours.norm1)
    load_norm(theirs.norm2, ours.norm2)
    return theirs.eval()


def torch_decoder_layer(ours, cfg: ModelConfig, norm_first: bool) -> nn.TransformerDecoderLayer:
    theirs = nn.TransformerDecoderLayer(
        D,
        H,
        FF,
        dropout=0.0,
        activation=cfg.activation,
        batch_first=True,
        layer_norm_eps=cfg.layer_norm_eps,
        norm_first=norm_first,
    )
    load_mha(theirs.self_attn, ours.self_attn)
    load_mha(theirs.multihead_attn, ours.cross_attn)
    theirs.linear1.load_state_dict(ours.ffn.lin1.state_dict())
    theirs.linear2.load_state_dict(ours.ffn.lin2.state_dict())
    for n in (1, 2, 3):
        load_norm(getattr(theirs, f"norm{n}"), getattr(ours, f"norm{n}"))
    return theirs.eval()


def torch_transformer(model: Transformer, norm_first: bool) -> nn.Transformer:
    cfg = model.config
    theirs = nn.Transformer(
        D,
        H,
        cfg.n_encoder_layers,
        cfg.n_decoder_layers,
        FF,
        dropout=0.0,
        activation=cfg.activation,
        layer_norm_eps=cfg.layer_norm_eps,
        batch_first=True,
        norm_first=norm_first,
    ).eval()
    theirs.encoder.layers = nn.ModuleList(torch_encoder_layer(m, cfg, norm_first) for m in model.encoder)
    theirs.decoder.layers = nn.ModuleList(torch_decoder_layer(m, cfg, norm_first) for m in model.decoder)
    load_norm(theirs.encoder.norm, model.enc_norm)
    load_norm(theirs.decoder.norm, model.dec_norm)
    return theirs


def capture_calls(mha: nn.MultiheadAttention) -> list:
    """Record the (args, kwargs) the enclosing layer passes to this attention module."""
    calls: list = []
    mha.register_forward_pre_hook(lambda mod, args, kwargs: calls.append((args, kwargs)), with_kwargs=True)
    return calls


def per_head_weights(mha: nn.MultiheadAttention, call) -> torch.Tensor:
    """Re-run one captured call asking for per-head weights.  -> [H, Tq, Tk] of the first sequence"""
    args, kwargs = call
    kwargs = {**kwargs, "need_weights": True, "average_attn_weights": False}
    return mha(*args, **kwargs)[1][0]


def ids(n, seed):
    return torch.randint(4, V, (1, n), generator=torch.Generator().manual_seed(seed))  # [1, n]


def close(ours, theirs, tol=TOL):
    err = (ours - theirs).abs().max().item()
    assert err <= tol, f"max |difference| {err:.2e} > {tol:.0e}"


# ---- layers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layers_match_torch(norm_first, activation):
    model = our_model(norm_first, activation)
    t = record(model, ids(7, 1), ids(5, 2))
    x = t["src.input"][None]  # [1, S, d]
    for i, layer in enumerate(model.encoder):
        theirs = torch_encoder_layer(layer, model.config, norm_first)
        calls = capture_calls(theirs.self_attn)
        with torch.no_grad():
            out = theirs(x)  # [1, S, d]
            close(t[f"enc.{i}.out"], out[0])
            fed = calls[0][0][0]  # what the layer gave its attention: x (post-norm) or norm1(x) (pre-norm)
            close(fed, theirs.norm1(x) if norm_first else x)
            close(t[f"enc.{i}.self.weights"], per_head_weights(theirs.self_attn, calls[0]))
        x = out


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_output_matches_torch_fast_path(norm_first):
    model = our_model(norm_first)
    t = record(model, ids(9, 3), ids(4, 4))
    theirs = torch_encoder_layer(model.encoder[0], model.config, norm_first)
    torch.backends.mha.set_fastpath_enabled(True)
    with torch.inference_mode():
        close(t["enc.0.out"], theirs(t["src.input"][None])[0])


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layers_match_torch(norm_first, activation):
    model = our_model(norm_first, activation)
    t = record(model, ids(7, 5), ids(6, 6))
    y, memory = t["tgt.input"][None], t["enc.out"][None]  # [1, T, d], [1, S, d]
    causal = nn.Transformer.generate_square_subsequent_mask(6)  # [T, T] 0 / -inf
    for i, layer in enumerate(model.decoder):
        theirs = torch_decoder_layer(layer, model.config, norm_first)
        self_calls, cross_calls = capture_calls(theirs.self_attn), capture_calls(theirs.multihead_attn)
        with torch.no_grad():
            out = theirs(y, memory, tgt_mask=causal)  # [1, T, d]
            close(t[f"dec.{i}.out"], out[0])
            close(t[f"dec.{i}.self.weights"], per_head_weights(theirs.self_attn, self_calls[0]))
            close(t[f"dec.{i}.cross.weights"], per_head_weights(theirs.multihead_attn, cross_calls[0]))
        assert torch.all(t[f"dec.{i}.self.weights"].triu(1) == 0)
        y = out


# ---- the whole encoder-decoder ----------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
def test_full_transformer_matches_nn_transformer(norm_first):
    model = our_model(norm_first, final_norm=True)
    t = record(model, ids(8, 7), ids(6, 8))
    theirs = torch_transformer(model, norm_first)
    with torch.no_grad():
        memory = theirs.encoder(t["src.input"][None])
        out = theirs(
            t["src.input"][None], t["tgt.input"][None], tgt_mask=nn.Transformer.generate_square_subsequent_mask(6)
        )  # [1, T, d]
    close(t["enc.out"], memory[0])
    close(t["dec.out"], out[0])
    close(t["logits"], out[0] @ model.tgt_embed.weight.T, tol=1e-4)  # tied projection; logits are larger


@pytest.mark.parametrize("trained_first", [False, True])
def test_norm_toggle_rewires_like_the_other_placement(trained_first):
    """RunOptions(norm=...) on weights trained one way equals nn.Transformer built the other way."""
    model = our_model(norm_first=trained_first, final_norm=True)
    flipped = RunOptions(norm="post" if trained_first else "pre")
    t = record(model, ids(7, 9), ids(5, 10), flipped)
    theirs = torch_transformer(model, norm_first=not trained_first)
    with torch.no_grad():
        out = theirs(
            t["src.input"][None], t["tgt.input"][None], tgt_mask=nn.Transformer.generate_square_subsequent_mask(5)
        )
    close(t["dec.out"], out[0])
    same = record(model, ids(7, 9), ids(5, 10))
    assert (same["dec.out"] - t["dec.out"]).abs().max() > 1e-2  # the toggle really changed the wiring


def test_padding_masks_match_nn_transformer_on_a_batch():
    model = our_model(final_norm=True)
    theirs = torch_transformer(model, norm_first=False)
    src, tgt = torch.cat([ids(7, 11), ids(7, 12)]), torch.cat([ids(5, 13), ids(5, 14)])  # [2, S], [2, T]
    src_pad = torch.tensor([[False] * 7, [False] * 4 + [True] * 3])  # the second source has 3 <pad>
    tgt_pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    with torch.inference_mode():
        fast = model(src, tgt, src_pad=src_pad, tgt_pad=tgt_pad)  # [2, T, V], fused attention
        recorded = model(src, tgt, rec=Recorder(True), src_pad=src_pad, tgt_pad=tgt_pad)  # step by step
    d = math.sqrt(D)
    src_in = model.src_embed(src) * d + model.sinusoid[:7]  # [2, S, d]
    tgt_in = model.tgt_embed(tgt) * d + model.sinusoid[:5]  # [2, T, d]
    src_blocked = torch.zeros(2, 7).masked_fill(src_pad, float("-inf"))  # [2, S], float like the causal mask
    tgt_blocked = torch.zeros(2, 5).masked_fill(tgt_pad, float("-inf"))  # [2, T]
    with torch.no_grad():
        out = theirs(
            src_in,
            tgt_in,
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
            src_key_padding_mask=src_blocked,
            tgt_key_padding_mask=tgt_blocked,
            memory_key_padding_mask=src_blocked,
        )
    ref_logits = out @ model.tgt_embed.weight.T  # [2, T, V]
    real = ~tgt_pad  # compare the real (non-pad) target positions
    close(fast[real], ref_logits[real], tol=1e-4)
    close(recorded[real], ref_logits[real], tol=1e-4)


# ---- attention against F.scaled_dot_product_attention -----------------------------------------------
def qkv(B=2, heads=4, Tq=5, Tk=7, dk=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, heads, Tq, dk, generator=g),
        torch.randn(B, heads, Tk, dk, generator=g),
        torch.randn(B, heads, Tk, dk, generator=g),
    )


MASK_CASES = {  # name: (options, site, key padding [B, Tk] or None)
    "none": (RunOptions(), "enc.0.self", None),
    "causal": (RunOptions(), "dec.0.self", None),
    "padding": (RunOptions(), "enc.0.self", torch.tensor([[False] * 7, [False] * 4 + [True] * 3])),
    "custom_cells": (RunOptions().with_custom_mask("enc.self", [(0, 1), (2, 2), (4, 6)]), "enc.0.self", None),
    "causal+cells+padding": (
        RunOptions().with_custom_mask("dec.0.cross", [(1, 0)]).with_causal("dec.cross", True),
        "dec.0.cross",
        torch.tensor([[False] * 6 + [True], [False] * 7]),
    ),
}


def allowed_cells(name, Tq, Tk, key_pad) -> torch.Tensor:
    """The same masks built independently, as SDPA's boolean 'may attend' [B, 1, Tq, Tk]."""
    ok = torch.ones(2, 1, Tq, Tk, dtype=torch.bool)
    if "causal" in name:
        ok &= torch.ones(Tq, Tk, dtype=torch.bool).tril()
    for q, k in {"custom_cells": [(0, 1), (2, 2), (4, 6)], "causal+cells+padding": [(1, 0)]}.get(name, []):
        ok[:, :, q, k] = False
    if key_pad is not None:
        ok &= ~key_pad[:, None, None, :]
    return ok


@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("name", list(MASK_CASES))
def test_recorded_attention_equals_sdpa(name, scale):
    options, site, key_pad = MASK_CASES[name]
    q, k, v = qkv()
    ctx = RunContext(our_model().config, options, Recorder(True), 0.0, "cpu")
    mask = build_mask(site, 5, 7, key_pad, ctx, "cpu")  # [B or 1, 1, Tq, Tk]
    rec = Recorder(True)
    ours = attention_steps(q, k, v, mask, scale, rec, "a")
    ref = F.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed_cells(name, 5, 7, key_pad), scale=None if scale else 1.0
    )
    close(ours, ref)
    steps = finished(rec)
    assert torch.equal(steps["a.mask"] == 0, allowed_cells(name, 5, 7, key_pad)[0, 0])
    factor = 1 / math.sqrt(8) if scale else 1.0
    close(steps["a.scaled"], steps["a.scores"] * factor)
    close(steps["a.weights"].sum(-1), torch.ones(4, 5))


def test_fully_blocked_row_gets_zero_weights_on_both_paths():
    model = our_model()
    row = [(2, k) for k in range(6)]  # query 2 of the encoder may look nowhere
    opts = RunOptions().with_custom_mask("enc.0.self", row)
    t = record(model, ids(6, 15), ids(4, 16), opts)
    assert torch.all(t["enc.0.self.weights"][:, 2] == 0) and torch.all(t["enc.0.self.context"][:, 2] == 0)
    with torch.inference_mode():
        fast = model(ids(6, 15), ids(4, 16), options=opts.replace(record=False))
    assert torch.isfinite(fast).all()
    close(fast[0], t["logits"], tol=1e-4)


FAST_CASES = [
    RunOptions(),
    RunOptions(norm="pre"),
    RunOptions(scale=False),
    RunOptions(residual=False),
    RunOptions(positional=False),
    RunOptions(n_heads=8),
    RunOptions(n_heads=1),
    RunOptions().with_causal("enc.self", True).with_causal("dec.self", False),
    RunOptions().with_custom_mask("dec.self", [(3, 0), (3, 1)]).with_custom_mask("enc.1.self", [(0, 0)]),
]


@pytest.mark.parametrize("options", FAST_CASES, ids=range(len(FAST_CASES)))
def test_fast_path_equals_recorded_path(options):
    model = our_model()
    src, tgt = torch.cat([ids(6, 17), ids(6, 18)]), torch.cat([ids(5, 19), ids(5, 20)])
    pads = {"src_pad": torch.tensor([[False] * 6, [False] * 4 + [True] * 2]), "tgt_pad": None}
    with torch.inference_mode():
        slow = model(src, tgt, options=options, rec=Recorder(True), **pads)
        fast = model(src, tgt, options=options.replace(record=False), **pads)
    close(fast, slow, tol=1e-4)


@pytest.mark.parametrize("S, T", [(3, 6), (7, 4)])
def test_fast_causal_cross_attention_equals_recorded_path(S, T):
    """A causal cross-attention with Tq != Tk: the fast path hands the triangle to the fused kernel."""
    model = our_model()
    options = RunOptions().with_causal("dec.cross", True)
    with torch.inference_mode():
        slow = model(ids(S, 21), ids(T, 22), options=options, rec=Recorder(True))
        fast = model(ids(S, 21), ids(T, 22), options=options.replace(record=False))
        plain = model(ids(S, 21), ids(T, 22), options=RunOptions(record=False))
    close(fast, slow, tol=1e-4)
    assert (fast - plain).abs().max() > 1e-3  # the causal cross mask did change something


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 6, 8, 12, 24])
def test_head_resplit_equals_torch_mha_with_that_many_heads(heads):
    torch.manual_seed(heads)
    ours = MultiHeadAttention(24).eval()
    theirs = load_mha(nn.MultiheadAttention(24, heads, batch_first=True), ours).eval()
    x, y = torch.randn(1, 5, 24), torch.randn(1, 7, 24)  # queries from x, keys/values from y
    causal = torch.zeros(1, 1, 5, 7).masked_fill(torch.ones(5, 7, dtype=torch.bool).triu(1), float("-inf"))
    rec = Recorder(True)
    with torch.no_grad():
        out = ours(x, y, causal, heads, True, None, rec, "s")
        fast = ours(x, y, causal, heads, True, None, Recorder(False), "s")
        ref, ref_w = theirs(x, y, y, attn_mask=causal[0, 0], need_weights=True, average_attn_weights=False)
    close(out, ref)
    close(fast, ref)
    close(finished(rec)["s.weights"], ref_w[0])


# ---- LayerNorm and positional encodings --------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_equals_functional_layer_norm(dtype):
    torch.manual_seed(0)
    norm = LayerNorm(16, eps=1e-5).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(16))
        norm.bias.copy_(torch.randn(16))
    x = torch.randn(2, 5, 16, dtype=dtype) * 3 + 2
    x[0, 1] = 7.0  # a constant row: variance 0
    rec = Recorder(True)
    with torch.no_grad():
        out = norm(x, rec, "n")
    close(out, F.layer_norm(x, (16,), norm.weight, norm.bias, 1e-5))
    t = finished(rec)
    close(t["n.mean"], x[0].mean(-1))
    close(t["n.var"], x[0].var(-1, unbiased=False), tol=1e-5 * float(x[0].var(-1, unbiased=False).max()))
    assert t["n.var"][1] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("d_model", [16, 15, 7, 2])
def test_sinusoidal_table_is_the_formula(d_model):
    table = sinusoidal_table(50, d_model)
    ref = torch.empty(50, d_model, dtype=torch.float64)
    for pos in range(50):
        for dim in range(d_model):
            two_i = dim - dim % 2
            angle = pos / 10000 ** (two_i / d_model)
            ref[pos, dim] = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    close(table.double(), ref, tol=1e-6)


def test_rotary_keeps_norms_and_depends_only_on_relative_position():
    torch.manual_seed(0)
    dk = 16
    cos, sin = rotary_angles(64, dk)  # [64, dk/2] each
    x = torch.randn(3, 64, dk)
    rotated = apply_rotary(x, cos, sin)
    close(rotated.norm(dim=-1), x.norm(dim=-1), tol=1e-4)
    # the same pair of vectors placed at (m, n) and (m + s, n + s) scores the same
    q, k = torch.randn(dk), torch.randn(dk)

    def score(m, n):
        rq = apply_rotary(q[None], cos[m : m + 1], sin[m : m + 1])[0]
        rk = apply_rotary(k[None], cos[n : n + 1], sin[n : n + 1])[0]
        return float(rq @ rk)

    for m, n, s in [(3, 1, 10), (0, 7, 20), (12, 12, 33)]:
        assert score(m, n) == pytest.approx(score(m + s, n + s), abs=1e-4)
    assert abs(score(3, 1) - score(3, 2)) > 1e-3  # but a different offset scores differently


def test_rotary_equals_complex_multiplication():
    """Independent formulation: pair (x[2i], x[2i+1]) as a complex number times exp(i * pos * theta_i)."""
    dk, T = 8, 12
    x = torch.randn(T, dk, dtype=torch.float64)
    theta = torch.tensor([10000 ** (-2 * i / dk) for i in range(dk // 2)], dtype=torch.float64)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * theta  # [T, dk/2]
    z = torch.complex(x[:, 0::2], x[:, 1::2]) * torch.polar(torch.ones_like(angle), angle)
    ref = torch.stack([z.real, z.imag], dim=-1).flatten(-2)  # [T, dk]
    cos, sin = rotary_angles(T, dk)
    close(apply_rotary(x.float(), cos, sin).double(), ref, tol=1e-5)
