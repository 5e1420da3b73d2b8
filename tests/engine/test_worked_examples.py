"""The worked numbers printed in the teaching texts this project started from come out of our engine.

Each test names its seed file. The numbers below are the texts' printed numbers; where a text rounded, the
tolerance is what its printed digits allow; where a text's own arithmetic slipped, the test says so, checks
the correct value, and checks that the printed one is off by more than rounding (so the note stays true).
"""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.layers import LayerNorm, MultiHeadAttention, attention_steps
from attnlab.engine.model import RunContext, build_mask, residual_block
from attnlab.engine.options import RunOptions
from attnlab.engine.positional import sinusoidal_period, sinusoidal_table
from attnlab.engine.trace import Recorder
from tests.support.recorded import finished

INF = float("inf")


def context(norm="trained", n_heads=1, d_model=3) -> RunContext:
    cfg = ModelConfig(d_model=d_model, n_heads=n_heads, d_ff=4, max_len=64)
    return RunContext(cfg, RunOptions(norm=norm), Recorder(True), 0.0, "cpu")


def steps(scores: torch.Tensor, values: torch.Tensor, mask=None, scale=False) -> dict:
    """A given score matrix [Tq, Tk] through attention_steps: q = scores, k = identity, so QK^T = scores."""
    Tq, Tk = scores.shape
    mask = torch.zeros(1, 1, Tq, Tk) if mask is None else mask
    rec = Recorder(True)
    attention_steps(scores[None, None], torch.eye(Tk)[None, None], values[None, None], mask, scale, rec, "a")
    return finished(rec)


def assert_close(ours, printed, tol, what=""):
    printed = torch.as_tensor(printed, dtype=torch.float32)
    err = (torch.as_tensor(ours, dtype=torch.float32) - printed).abs().max().item()
    assert err <= tol, f"{what}: ours differs from the text's numbers by {err:.2g} > {tol:g}"


# ---- 002_442683648622f26d.txt: the causal (look-ahead) mask, 4 x 4 ------------------------------------
def test_causal_mask_example():
    S = torch.tensor(
        [
            [1.2, 0.5, -1.0, 0.0],  # the text's scaled score matrix QK^T / sqrt(d_k)
            [0.3, 2.0, 0.1, -0.5],
            [-0.8, 0.7, 1.5, 0.2],
            [1.0, -1.2, 0.3, 0.8],
        ]
    )
    mask = build_mask("dec.0.self", 4, 4, None, context(), "cpu")  # our decoder self-attention mask
    M = torch.tensor([[0, -INF, -INF, -INF], [0, 0, -INF, -INF], [0, 0, 0, -INF], [0, 0, 0, 0]])
    assert mask.shape == (1, 1, 4, 4) and torch.equal(mask[0, 0], M)
    t = steps(S, torch.eye(4), mask)  # values = identity, so the context rows are the weights
    assert torch.equal(t["a.masked"][0], S + M)
    A = t["a.weights"][0]
    assert torch.equal(t["a.context"][0], A)
    assert A[0].tolist() == [1.0, 0.0, 0.0, 0.0]  # row 0: softmax([1.2, -inf, -inf, -inf])
    assert_close(A[1, :2], [0.1544, 0.8456], 1e-4, "row 1 at 4 decimals")  # exact: 0.15447, 0.84553
    printed_A = [
        [1.000, 0.000, 0.000, 0.000],
        [0.154, 0.845, 0.000, 0.000],
        [0.065, 0.290, 0.645, 0.000],
        [0.412, 0.046, 0.205, 0.337],
    ]
    # three decimals, but 0.84553 is printed 0.845 (cut, not rounded): one unit of the last place
    assert_close(A, printed_A, 1e-3, "A")
    assert torch.all(A.triu(1) == 0)


def test_mask_broadcasts_over_batch_and_heads():
    """Same text: one [50, 50] mask is applied to scores [32, 8, 50, 50] as a [1, 1, 50, 50] tensor."""
    mask = build_mask("dec.0.self", 50, 50, None, context(), "cpu")
    assert mask.shape == (1, 1, 50, 50)
    assert (torch.zeros(32, 8, 50, 50) + mask).shape == (32, 8, 50, 50)


# ---- 003_03adb4b5a2752aab.txt: add & norm, post-norm and pre-norm, X = [1.0, 2.0, -1.0] ---------------
def add_and_norm(x, sublayer_out, norm):
    """One residual_block of our engine whose sub-layer returns the text's given output."""
    seen = []

    def sublayer(h):
        seen.append(h[0, 0])
        return torch.tensor(sublayer_out)[None, None]

    ctx = context(norm)
    out = residual_block(torch.tensor(x)[None, None], sublayer, LayerNorm(3), ctx, "enc.0", 1)
    return out[0, 0], finished(ctx.rec), seen[0]


def test_post_norm_self_attention_sublayer_example():
    out, t, fed = add_and_norm([1.0, 2.0, -1.0], [0.5, 1.5, -0.5], "post")
    assert fed.tolist() == [1.0, 2.0, -1.0]  # post-norm: the sub-layer reads x itself
    assert_close(t["enc.0.resid1"], [1.5, 3.5, -1.5], 0, "residual")
    assert_close(t["enc.0.norm1.mean"], [1.17], 0.005, "mean")  # 3.5 / 3
    # The text squares the deviations to 0.11, 5.43, 7.13, whose mean is 4.22; it prints 4.89 (a slip),
    # then std 2.21 and normalised values [0.15, 1.06, -1.19] that inherit the slip.
    var = t["enc.0.norm1.var"]
    assert_close(var, [(0.11 + 5.43 + 7.13) / 3], 0.01, "variance from the text's own squared terms")
    assert abs(var.item() - 4.89) > 0.5
    assert_close(out, [0.16, 1.14, -1.30], 0.005, "normalised output, correct arithmetic")
    assert (out - torch.tensor([0.15, 1.06, -1.19])).abs().max() > 0.05  # the printed values carry the slip


def test_post_norm_ffn_sublayer_example():
    out, t, _ = add_and_norm([0.15, 1.06, -1.19], [0.25, 0.80, -1.0], "post")
    assert_close(t["enc.0.resid1"], [0.40, 1.86, -2.19], 1e-6, "residual")
    assert_close(t["enc.0.norm1.mean"], [0.023], 0.0005, "mean")  # 0.07 / 3
    # The text prints variance 2.15 (std 1.47) and [0.26, 1.25, -1.50]; the deviations it lists,
    # 0.377, 1.837 and -2.213, square and average to 2.80 (std 1.67).
    assert_close(t["enc.0.norm1.var"], [(0.377**2 + 1.837**2 + 2.213**2) / 3], 0.005, "variance")
    assert_close(out, [0.22, 1.10, -1.32], 0.006, "normalised output, correct arithmetic")
    assert (out - torch.tensor([0.26, 1.25, -1.50])).abs().max() > 0.05


def test_pre_norm_example():
    out, t, fed = add_and_norm([1.0, 2.0, -1.0], [0.5, 1.0, -0.8], "pre")
    assert_close(t["enc.0.norm1.mean"], [0.67], 0.005, "mean")  # 2.0 / 3
    assert_close(t["enc.0.norm1.var"], [1.56], 0.005, "variance")
    assert_close(t["enc.0.norm1.var"].sqrt(), [1.25], 0.005, "std")
    # pre-norm: the sub-layer reads LayerNorm(x). The text prints [0.27, 1.07, -1.33]; it divides by the
    # rounded 1.25 and writes -1.336 as -1.33, so the last digit can be off by one.
    assert_close(fed, [0.27, 1.07, -1.33], 0.01, "normalised input")
    assert_close(out, [1.5, 3.0, -1.8], 1e-6, "x + sublayer(norm(x))")
    assert "enc.0.norm1.out" in t and torch.equal(t["enc.0.resid1"], out[None])


# ---- 003_03adb4b5a2752aab.txt: "cat" attends over a 6-word sentence (3-d vectors) ----------------------
def test_cat_attention_example():
    keys = torch.tensor(
        [
            [1.0, 0.0, 0.0],
            [1.0, 0.5, 0.0],
            [0.0, 0.0, 1.0],  # The, cat, sat
            [0.5, 0.5, 0.0],
            [0.5, 0.0, 0.5],
            [0.0, 0.5, 0.5],
        ]
    )  # on, the, mat
    values = torch.tensor(
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]
    )
    q_cat = torch.tensor([[1.0, 0.0, 1.0]])
    rec = Recorder(True)
    attention_steps(q_cat[None, None], keys[None, None], values[None, None], torch.zeros(1, 1, 1, 6), False, rec, "a")
    t = finished(rec)
    assert_close(t["a.scores"][0, 0], [1.0, 1.0, 1.0, 0.5, 1.0, 0.5], 1e-6, "scores")
    # The text's weights [0.217 x4, 0.132 x2] have the right ratio (e^-0.5) but sum to 1.132, not 1; its
    # weighted sum [0.391, 0.349, 0.499] is built from them. Normalised, both agree with ours.
    printed_w = torch.tensor([0.217, 0.217, 0.217, 0.132, 0.217, 0.132])
    w = t["a.weights"][0, 0]
    assert w.sum().item() == pytest.approx(1.0, abs=1e-6) and printed_w.sum().item() == pytest.approx(1.132)
    assert_close(w, printed_w / printed_w.sum(), 0.001, "weights")
    printed_context = torch.tensor([0.391, 0.349, 0.499])
    assert_close(t["a.context"][0, 0], printed_context / printed_w.sum(), 0.002, "context")


# ---- 003_03adb4b5a2752aab.txt: "The cat sat", 3 tokens x 4 dims, W_q = W_k = W_v --------------------
def test_three_token_projection_example():
    X = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]])
    W = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2], [1.3, 1.4, 1.5, 1.6]])
    mha = MultiHeadAttention(4, bias=False)
    with torch.no_grad():
        for lin in (mha.w_q, mha.w_k, mha.w_v):
            lin.weight.copy_(W)  # nn.Linear computes x W^T, which is how the text's first row comes out
    rec = Recorder(True)
    with torch.no_grad():
        mha(X[None], X[None], torch.zeros(1, 1, 3, 3), 1, False, None, rec, "s")
    t = finished(rec)
    # The text's Q (= K = V) for "The" is [0.3, 0.7, 1.1, 1.5], and every row starts 0.3, 0.7, 1.1. Its other
    # entries of rows 2 and 3 and its scores [3.74, 8.74, 13.74] carry arithmetic slips: even from its own
    # printed vectors, 0.3^2 + 0.7^2 + 1.1^2 + 1.5^2 = 4.04, not 3.74.
    for name in ("q", "k", "v"):
        assert_close(t[f"s.{name}"][0, 0], [0.3, 0.7, 1.1, 1.5], 1e-6, f"{name} of 'The'")
        assert_close(t[f"s.{name}"][0, :, 0], [0.3, 0.7, 1.1], 1e-6, f"first column of {name}")
    assert t["s.scores"][0, 0, 0].item() == pytest.approx(0.3**2 + 0.7**2 + 1.1**2 + 1.5**2, abs=1e-5)
    assert abs(t["s.scores"][0, 0, 0].item() - 3.74) > 0.2
    # (its softmax weights for those scores are labelled "might be": illustrative, not computed)


# ---- 000_e25b19735138d382.txt: self-attention from dot products, then with W_Q, W_K, W_V -----------------
@pytest.fixture(scope="module")
def sentence() -> torch.Tensor:
    """The text's 8 words, embedded by nn.Embedding(10, 16) right after torch.manual_seed(123).  -> [8, 16]"""
    torch.manual_seed(123)
    embed = torch.nn.Embedding(10, 16)
    x = embed(torch.tensor([0, 7, 1, 2, 5, 6, 4, 3])).detach()
    printed_row0 = [
        0.3374,
        -0.1778,
        -0.3035,
        -0.5880,
        0.3486,
        0.6603,
        -0.2196,
        -0.3792,
        0.7671,
        -1.1925,
        0.6984,
        -1.4097,
        0.1794,
        1.8951,
        0.4954,
        0.2692,
    ]
    assert_close(x[0], printed_row0, 5e-5, "embedding (if this fails, torch's RNG changed, not the engine)")
    return x


def test_plain_dot_product_attention_example(sentence):
    rec = Recorder(True)
    x = sentence[None, None]
    attention_steps(x, x, x, torch.zeros(1, 1, 8, 8), False, rec, "a")  # q = k = v = the embeddings
    t = finished(rec)
    omega = [
        [9.7601, 1.7326, 4.7543, -1.3587, 0.4752, -1.6717, 1.0227, -0.1286],
        [1.7326, 16.0787, 9.0642, -0.3370, 1.1368, 1.1972, 1.6485, -1.2789],
        [4.7543, 9.0642, 22.6615, -0.8519, 7.7799, 2.7483, -0.6832, 1.6236],
        [-1.3587, -0.3370, -0.8519, 13.9473, -1.4198, 10.9659, -0.5887, 2.3869],
        [0.4752, 1.1368, 7.7799, -1.4198, 13.7511, -6.8568, -2.5114, -3.3468],
        [-1.6717, 1.1972, 2.7483, 10.9659, -6.8568, 24.6738, -3.8294, 4.9581],
        [1.0227, 1.6485, -0.6832, -0.5887, -2.5114, -3.8294, 15.8691, 2.0269],
        [-0.1286, -1.2789, 1.6236, 2.3869, -3.3468, 4.9581, 2.0269, 18.7382],
    ]
    assert_close(t["a.scores"][0], omega, 6e-5, "omega")
    printed_row0 = [
        9.760122299194336,
        1.7326233386993408,
        4.75434684753418,
        -1.3586798906326294,
        0.47519540786743164,
        -1.6716841459274292,
        1.0226718187332153,
        -0.12858974933624268,
    ]
    assert_close(t["a.scores"][0, 0], printed_row0, 1e-5, "word 0 dot products")
    weights_row0 = torch.tensor(
        [9.9270e-01, 3.2398e-04, 6.6502e-03, 1.4723e-05, 9.2135e-05, 1.0766e-05, 1.5929e-04, 5.0374e-05]
    )
    weights_row5 = torch.tensor(
        [3.6165e-12, 6.3713e-11, 3.0053e-10, 1.1136e-06, 2.0250e-14, 1.0000e00, 4.1805e-13, 2.7390e-09]
    )
    for row, printed in ((0, weights_row0), (5, weights_row5)):  # five significant digits
        assert torch.allclose(t["a.weights"][0, row], printed, rtol=2e-4, atol=0), f"weights row {row}"
    contexts = [
        [
            3.3420e-01,
            -1.8324e-01,
            -3.0218e-01,
            -5.7772e-01,
            3.5662e-01,
            6.6452e-01,
            -2.0998e-01,
            -3.7798e-01,
            7.6537e-01,
            -1.1946e00,
            6.9960e-01,
            -1.4067e00,
            1.7021e-01,
            1.8838e00,
            4.8729e-01,
            2.4730e-01,
        ],
        [
            -9.3975e-01,
            -4.6856e-01,
            1.0311e00,
            -2.8192e-01,
            4.9373e-01,
            -1.2896e-02,
            -2.7327e-01,
            -7.6358e-01,
            1.3958e00,
            -9.9543e-01,
            -7.1287e-04,
            1.2449e00,
            -7.8077e-02,
            1.2765e00,
            -1.4589e00,
            -2.1601e00,
        ],
        [
            -7.7021e-02,
            -1.0205e00,
            -1.6895e-01,
            9.1776e-01,
            1.5810e00,
            1.3010e00,
            1.2753e00,
            -2.0095e-01,
            4.9647e-01,
            -1.5723e00,
            9.6657e-01,
            -1.1481e00,
            -1.1589e00,
            3.2547e-01,
            -6.3151e-01,
            -2.8400e00,
        ],
        [
            -1.3679e00,
            1.0614e-01,
            -2.1317e00,
            1.0480e00,
            -3.7127e-01,
            -9.1234e-01,
            -4.3802e-01,
            -1.0329e00,
            9.3425e-01,
            1.5453e00,
            5.7218e-01,
            -1.8049e-01,
            -6.0455e-03,
            -8.8691e-02,
            2.0559e-01,
            -5.2292e-01,
        ],
    ]
    assert_close(t["a.context"][0, :4], contexts, 1e-4, "context vectors")


def test_scaled_dot_product_with_projections_example(sentence):
    torch.manual_seed(123)
    W_Q, W_K, W_V = torch.randn(16, 16), torch.randn(16, 16), torch.randn(16, 16)  # the text's draws
    mha = MultiHeadAttention(16, bias=False)
    with torch.no_grad():
        mha.w_q.weight.copy_(W_Q.T)  # the text computes x @ W; nn.Linear computes x @ weight^T
        mha.w_k.weight.copy_(W_K.T)
        mha.w_v.weight.copy_(W_V.T)
        mha.w_o.weight.copy_(torch.eye(16))  # leave the context as it is
    rec = Recorder(True)
    with torch.no_grad():  # one head, so d_k = 16 and the scores are divided by 4, as in the text
        mha(sentence[None], sentence[None], torch.zeros(1, 1, 8, 8), 1, True, None, rec, "s")
    t = finished(rec)
    q_2 = [
        -4.0813,
        -1.6130,
        -2.5060,
        -3.3268,
        -4.1174,
        -2.3729,
        -2.6083,
        2.3683,
        -4.1584,
        9.9378,
        3.5163,
        -2.2705,
        4.6320,
        -4.2101,
        -0.5922,
        4.6235,
    ]
    k_2 = [
        -4.8231,
        -4.6870,
        -0.2487,
        13.0042,
        -2.5805,
        -1.9165,
        0.7472,
        2.6754,
        4.7989,
        0.1297,
        -2.5521,
        3.9984,
        4.0280,
        3.7667,
        0.2393,
        -3.2154,
    ]
    v_2 = [
        4.1296,
        -0.5803,
        1.4880,
        1.8756,
        -0.3079,
        -6.6038,
        -5.6030,
        4.7419,
        3.5117,
        2.3469,
        -3.6096,
        -2.3465,
        -4.7263,
        4.6613,
        -2.4629,
        -1.5542,
    ]
    for name, printed in (("q", q_2), ("k", k_2), ("v", v_2)):
        assert_close(t[f"s.{name}"][0, 1], printed, 2e-4, f"{name} of word 2")
    omega_2 = [-35.2682, -44.7632, 16.0975, 21.0103, 27.2076, 33.4731, 11.9149, 55.0160]
    assert_close(t["s.scores"][0, 1], omega_2, 3e-4, "omega_2")  # float32 sums of 16 products of ~5
    assert_close(t["s.scaled"][0, 1], torch.tensor(omega_2) / 4, 1e-4, "omega_2 / sqrt(16)")
    printed_w = torch.tensor(
        [1.5667e-10, 1.4591e-11, 5.9150e-05, 2.0200e-04, 9.5108e-04, 4.5550e-03, 2.0789e-05, 9.9421e-01]
    )
    assert torch.allclose(t["s.weights"][0, 1], printed_w, rtol=2e-4, atol=0)
    context_2 = [
        -4.7645,
        6.1684,
        -8.1683,
        -6.4059,
        3.0102,
        5.7119,
        -1.4577,
        1.6116,
        1.6057,
        -4.7039,
        4.0043,
        0.5080,
        3.5367,
        2.7837,
        2.8228,
        -7.7864,
    ]
    assert_close(t["s.context"][0, 1], context_2, 2e-4, "context vector of word 2")
    assert_close(t["s.out"][1], context_2, 2e-4, "through W_O = identity")


# ---- 003_03adb4b5a2752aab.txt: why divide by sqrt(d_k) -------------------------------------------------
@pytest.mark.parametrize("d_k", [4, 16, 64, 256])
def test_dot_products_of_unit_variance_vectors_have_variance_d_k(d_k):
    """Components with mean 0 and variance 1: q.k has variance d_k; q.k / sqrt(d_k) has variance 1."""
    g = torch.Generator().manual_seed(d_k)
    q = torch.randn(1, 1, 1000, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(1, 1, 400, d_k, generator=g, dtype=torch.float64)
    rec = Recorder(True)
    attention_steps(q, k, k, torch.zeros(1, 1, 1000, 400, dtype=torch.float64), True, rec, "a")
    t = finished(rec)
    assert t["a.scores"].var().item() == pytest.approx(d_k, rel=0.1)
    assert t["a.scaled"].var().item() == pytest.approx(1.0, rel=0.1)


# ---- 002_442683648622f26d.txt, 001_07a2cfd966e369b7.txt, 000_e25b19735138d382.txt: sinusoidal encoding --
def test_sinusoidal_exp_log_form_and_first_row():
    d_model = 128  # the text's plotting example: 100 positions, d_model 128
    table = sinusoidal_table(100, d_model)
    div_term = torch.exp(torch.arange(0, d_model, 2).double() * (-math.log(10000.0) / d_model))
    angle = torch.arange(100).double()[:, None] * div_term  # [100, 64]
    assert_close(table[:, 0::2], angle.sin(), 1e-6, "sin at even dims")
    assert_close(table[:, 1::2], angle.cos(), 1e-6, "cos at odd dims")
    assert table[0].tolist() == [0.0, 1.0] * 64  # sin 0, cos 0
    assert sinusoidal_table(1, 512).shape[1] // 2 - 1 == 255  # d_model 512: the last pair index i is 255


def test_sinusoidal_shift_is_a_fixed_rotation():
    """PE(pos + k) comes from PE(pos) by rotating each (sin, cos) pair through k * w_i, whatever pos is."""
    d_model, k = 16, 5
    table = sinusoidal_table(60, d_model).double()
    w = torch.tensor([10000 ** (-2 * i / d_model) for i in range(d_model // 2)], dtype=torch.float64)
    c, s = torch.cos(k * w), torch.sin(k * w)
    for pos in (0, 7, 31, 54):
        sin_p, cos_p = table[pos, 0::2], table[pos, 1::2]
        shifted = torch.stack([sin_p * c + cos_p * s, cos_p * c - sin_p * s], dim=-1).flatten()
        assert_close(shifted, table[pos + k], 1e-6, f"pos {pos}")


def test_low_dimensions_oscillate_fastest():
    """Dimension pair 0 has the shortest wavelength (2 pi positions), the last pair the longest (close to
    10000 * 2 pi). (000_e25b19735138d382.txt's interpretation bullets state it the other way round.)"""
    periods = [sinusoidal_period(dim, 512) for dim in range(0, 512, 2)]
    assert periods[0] == pytest.approx(2 * math.pi)
    assert all(a < b for a, b in zip(periods, periods[1:], strict=False))
    assert periods[-1] == pytest.approx(2 * math.pi * 10000 ** (510 / 512))
