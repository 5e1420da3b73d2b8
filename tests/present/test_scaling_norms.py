"""Why ÷√dₖ and LayerNorm vs BatchNorm: the Qt-free numbers checked against direct torch computations."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PySide6 import QtWidgets

from attnlab.engine.options import RunOptions
from attnlab.present.norm_compare import batchnorm_by_length, compare_norms, norm_input
from attnlab.present.scaling import entropy_rows, random_qk, random_scaling, scaling_sweep, site_scaling
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.stages.norm_compare import NormComparePanel
from attnlab.ui.stages.scaling import ScaleWhyPanel

SRC, TGT = "the black cat sees the dog", "le chat noir"


@pytest.fixture(scope="module")
def trace(tiny_model):
    return tiny_model("encoder-decoder", n_encoder_layers=1).trace(SRC, TGT, RunOptions(pad_to=9))


@pytest.mark.parametrize("site", ["enc.0.self", "dec.0.self", "dec.0.cross"])
def test_site_scaling_matches_torch_softmax(trace, site):
    stats = site_scaling(trace, site)
    q, k = trace[f"{site}.q"].double(), trace[f"{site}.k"].double()  # [H, Tq, dk], [H, Tk, dk]
    mask = trace[f"{site}.mask"].double()  # [Tq, Tk]
    d_k = q.shape[-1]
    assert stats.d_k == d_k
    scores = q @ k.transpose(-1, -2)  # [H, Tq, Tk]
    allowed = torch.isfinite(mask).expand_as(scores)
    np.testing.assert_allclose(stats.raw, scores[allowed].numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stats.scaled, (scores / math.sqrt(d_k))[allowed].numpy(), rtol=1e-4, atol=1e-5)
    assert stats.raw_counts.sum() == stats.scaled_counts.sum() == int(allowed.sum())
    live = torch.isfinite(mask).any(-1)  # [Tq]
    for scale, entropy, top in (
        (1.0, stats.entropy_raw, stats.max_raw),
        (math.sqrt(d_k), stats.entropy_scaled, stats.max_scaled),
    ):
        p = torch.softmax(scores / scale + mask, dim=-1)[:, live]  # [H, rows, Tk]
        expected = -(p * torch.log(p.clamp_min(1e-300))).sum(-1).mean(-1)  # [H]
        np.testing.assert_allclose(entropy, expected.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(top, p.max(-1).values.mean(-1).numpy(), rtol=1e-4)
    # the scaled scores are the ones the run itself divided (scaling is on by default)
    np.testing.assert_allclose(stats.scaled, trace[f"{site}.scaled"][allowed].double().numpy(), rtol=1e-4, atol=1e-5)
    assert stats.std_raw == pytest.approx(stats.std_scaled * math.sqrt(d_k), rel=1e-9)
    assert np.all(stats.entropy_scaled <= stats.entropy_uniform + 1e-6)


def test_entropy_is_minus_sum_p_log_p():
    p = np.array([[0.5, 0.25, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(entropy_rows(p), [1.5 * math.log(2), 0.0])


def test_random_draw_is_the_direct_computation():
    draw = random_scaling(64, seed=5)
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((128, 64)), rng.standard_normal((32, 64))
    scores = q @ k.T
    np.testing.assert_allclose(draw.scores, scores)
    assert draw.std_raw == pytest.approx(scores.std())

    def top(s):
        return torch.softmax(torch.from_numpy(s), -1).max(-1).values.mean().item()

    assert draw.max_scaled == pytest.approx(top(scores / 8)) and draw.max_raw == pytest.approx(top(scores))


@pytest.mark.parametrize("d_k", [1, 16, 256, 1024])
def test_spread_of_qk_grows_as_sqrt_dk(d_k):
    n = 4000  # independent (q, k) pairs: row i of q with row i of k
    q, k = random_qk(d_k, seed=1, n_queries=n, n_keys=n)
    scores = (q * k).sum(axis=1)  # [n] q_i · k_i
    kurtosis = 3 + 6 / d_k  # of a sum of d_k products of two independent N(0, 1)
    rel_err = math.sqrt((kurtosis - 1) / (4 * scores.size))
    assert scores.std() == pytest.approx(math.sqrt(d_k), rel=5 * rel_err)
    assert (scores / math.sqrt(d_k)).std() == pytest.approx(1.0, rel=5 * rel_err)


def test_softmax_saturates_without_the_division():
    sweep = scaling_sweep(seed=0)
    assert sweep["max_raw"][-1] > 0.85  # d_k = 1024: nearly one-hot over 32 keys
    assert sweep["max_scaled"].max() < 0.35  # ÷√dₖ keeps every row spread out
    assert sweep["max_raw"][-1] > 3 * sweep["max_scaled"][-1]
    np.testing.assert_allclose(sweep["std_raw"][-3:], np.sqrt(sweep["d_k"][-3:]), rtol=0.1)
    with pytest.raises(ValueError, match="between 1 and 1024"):
        random_qk(0, seed=0)


def test_layer_norm_and_batch_norm_equal_torch(trace):
    x = norm_input(trace, "enc.0", 1)  # [T, d]
    cmp = compare_norms(x)
    xt = torch.from_numpy(x).double()
    np.testing.assert_allclose(cmp.ln_out, F.layer_norm(xt, (x.shape[1],), eps=1e-5).numpy(), rtol=1e-6, atol=1e-8)
    running_mean, running_var = torch.zeros(x.shape[1], dtype=torch.double), torch.ones(x.shape[1], dtype=torch.double)
    bn = F.batch_norm(xt, running_mean, running_var, training=True, momentum=1.0, eps=1e-5)
    np.testing.assert_allclose(cmp.bn_out, bn.numpy(), rtol=1e-6, atol=1e-8)
    # with momentum 1 the running statistics are the batch's: mean, and the unbiased variance
    np.testing.assert_allclose(cmp.bn_mean, running_mean.numpy(), rtol=1e-9, atol=1e-12)
    n = x.shape[0]
    np.testing.assert_allclose(cmp.bn_var * n / (n - 1), running_var.numpy(), rtol=1e-9)
    np.testing.assert_allclose(cmp.ln_mean, trace["enc.0.norm1.mean"].double().numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(cmp.ln_var, trace["enc.0.norm1.var"].double().numpy(), rtol=1e-4, atol=1e-6)


def test_batchnorm_output_depends_on_the_neighbours_layernorm_does_not(trace):
    x = norm_input(trace, "dec.0", 3)
    sweep = batchnorm_by_length(x, token=1)
    assert list(sweep.lengths) == list(range(2, x.shape[0] + 1))
    np.testing.assert_allclose(sweep.ln_change, 0.0, atol=1e-12)
    assert sweep.bn_change[0] > 0.1 and sweep.bn_change[-1] == 0.0
    xt = torch.from_numpy(x[:3]).double()
    np.testing.assert_allclose(sweep.bn[1], F.batch_norm(xt, None, None, training=True, eps=1e-5)[1].numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="not in a sentence"):
        batchnorm_by_length(x, token=x.shape[0])


def _stage(trace, key):
    return next(s for s in stages_for(trace) if s.key == key)


def test_scale_why_panel_draws_the_site_and_the_chosen_dk(qtbot, trace):
    panel = ScaleWhyPanel()
    qtbot.addWidget(panel)
    panel.show_stage(trace, _stage(trace, "dec.0.cross.scale_why"), ViewState())
    data = panel.shown_data()
    stats = site_scaling(trace, "dec.0.cross")
    np.testing.assert_array_equal(data["entropy_scaled"], stats.entropy_scaled)
    np.testing.assert_array_equal(data["raw_counts"], stats.raw_counts)
    ticks = panel._entropy.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [label for _, label in ticks] == [f"head {h + 1}" for h in range(len(stats.entropy_scaled))]  # from 1
    panel.findChild(QtWidgets.QSpinBox, "scaleDkSpin").setValue(512)
    panel.findChild(QtWidgets.QSpinBox, "scaleSeedSpin").setValue(3)
    draw = panel.shown_data()["random"]["draw"]
    assert (draw.d_k, draw.seed) == (512, 3)
    assert draw.std_raw == pytest.approx(random_scaling(512, 3).std_raw)
    np.testing.assert_array_equal(panel.shown_data()["random"]["sweep"]["std_raw"], scaling_sweep(3)["std_raw"])


def test_norm_compare_panel_slider_moves_batchnorm_only(qtbot, trace):
    panel = NormComparePanel()
    qtbot.addWidget(panel)
    panel.show_stage(trace, _stage(trace, "enc.0.norm1.norm_vs_batch"), ViewState())
    x = norm_input(trace, "enc.0", 1)
    data = panel.shown_data()
    assert data["length"] == x.shape[0] and data["token"] == 0
    np.testing.assert_allclose(data["bn_token"], compare_norms(x).bn_out[0])
    panel.findChild(QtWidgets.QSpinBox, "normTokenSpin").setValue(2)
    panel.findChild(QtWidgets.QSlider, "batchLengthSlider").setValue(4)
    data = panel.shown_data()
    assert (data["token"], data["length"]) == (2, 4)
    np.testing.assert_allclose(data["bn_token"], compare_norms(x[:4]).bn_out[2])
    np.testing.assert_allclose(data["ln_token"], compare_norms(x).ln_out[2])
