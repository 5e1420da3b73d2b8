"""The view-models of present/views hold exactly the trace's numbers (plain pytest, no Qt): every matrix is the
recorded entry (float32, C-contiguous) of the chosen head, the add & norm statistics match torch's own mean,
variance and RMS of the norm's input, and a stage the run cannot show becomes one sentence."""

import numpy as np
import pytest
import torch

from attnlab.checkpoints.additive import TITLE as ADDITIVE_TITLE
from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present import words
from attnlab.present.kinds import FAMILY_ONLY_KINDS, KINDS, view_for
from attnlab.present.stages import Stage, ViewState, stages_for
from attnlab.present.views.model import MatrixView, MessageView

SRC, TGT = "the black cat sees the dog", "le chat noir"


@pytest.fixture(scope="module")
def enc_dec(tiny_model):
    return tiny_model("encoder-decoder", n_encoder_layers=1).trace(SRC, TGT)


@pytest.fixture(scope="module")
def llama_like(tiny_model):
    """RMSNorm, a gated SiLU FFN and grouped-query attention (4 Q heads sharing 2 K/V heads)."""
    model = tiny_model("decoder-only", norm="rmsnorm", ffn="gated", activation="silu", n_kv_heads=2)
    return model.trace(SRC)


def entry(trace, name: str) -> np.ndarray:
    return trace[name].detach().float().numpy()


def assert_matrix(shown: MatrixView, expected: np.ndarray) -> None:
    assert shown.matrix.dtype == np.float32 and shown.matrix.flags.c_contiguous
    np.testing.assert_array_equal(shown.matrix, expected)


def views_of(trace, kind: str, display: ViewState | None = None):
    stages = [s for s in stages_for(trace) if s.kind == kind]
    assert stages, kind
    return [(s, view_for(trace, s, display or ViewState())) for s in stages]


def test_every_stage_with_a_builder_gets_a_view(enc_dec):
    kinds = {s.kind for s in stages_for(enc_dec)} & set(KINDS)
    # the tiny encoder-decoder has every other kind (imported families' own, the logit lens of decoder LMs,
    # Mixtral's experts, the position bias: their test files)
    bias_kinds = {"bias", "biased"}
    assert kinds == set(KINDS) - FAMILY_ONLY_KINDS - set(names.DISENTANGLED_TERMS) - {"lens", "moe"} - bias_kinds
    for stage in stages_for(enc_dec):
        if stage.kind in KINDS:
            assert not isinstance(view_for(enc_dec, stage, ViewState()), MessageView), stage.key


@pytest.mark.parametrize("head", [0, 2, 99])
def test_attention_maps_are_the_chosen_heads_numbers(enc_dec, head):
    shown_head = min(head, 3)  # 4 heads: a head past the end shows the last
    for kind in ("scores", "scaled", "masked", "weights"):
        for stage, view in views_of(enc_dec, kind, ViewState(head=head)):
            assert view.head == shown_head and view.n_heads == 4
            assert_matrix(view.matrix, entry(enc_dec, f"{stage.site}.{kind}")[shown_head])
            mask = entry(enc_dec, f"{stage.site}.mask")
            blocked = np.isneginf(mask)
            if blocked.any():
                np.testing.assert_array_equal(view.matrix.masked, blocked)
            else:
                assert view.matrix.masked is None
            if kind == "weights":
                assert view.matrix.levels == (0.0, 1.0) and view.matrix.symmetric is None
                sums = view.matrix.matrix.sum(axis=1)
                assert f"Row sums: {sums.min():.3f}" in view.note


def test_decoder_self_attention_mask_is_causal(enc_dec):
    (stage, view), *_ = [(s, v) for s, v in views_of(enc_dec, "mask") if s.site == "dec.0.self"]
    t = view.blocked.shape[0]
    np.testing.assert_array_equal(view.blocked, np.triu(np.ones((t, t), dtype=bool), 1))
    assert "causal" in view.note and view.matrix.masked is view.blocked
    assert view.matrix.rows[0].endswith("→ le") and view.matrix.cols[0] == "<s>"


def test_qkv_of_grouped_query_attention_reads_the_shared_kv_head(llama_like):
    for head, kv_head in ((0, 0), (1, 0), (2, 1), (3, 1)):
        for stage, view in views_of(llama_like, "qkv", ViewState(head=head)):
            assert view.kv_head == kv_head and view.sharing
            assert_matrix(view.q, entry(llama_like, f"{stage.site}.q")[head])
            assert_matrix(view.k, entry(llama_like, f"{stage.site}.k")[kv_head])
            assert_matrix(view.v, entry(llama_like, f"{stage.site}.v")[kv_head])
            assert view.k.title == f"K (keys, K/V head {kv_head + 1})"


def test_vectors_after_attention(enc_dec):
    for stage, view in views_of(enc_dec, "context", ViewState(head=1)):
        assert_matrix(view.matrix, entry(enc_dec, f"{stage.site}.context")[1])
    for stage, view in views_of(enc_dec, "concat", ViewState(head=1)):
        concat = entry(enc_dec, f"{stage.site}.concat")
        assert_matrix(view.matrix, concat)
        assert view.head_width == concat.shape[1] // 4 == 8
        assert view.boundaries == (7.5, 15.5, 23.5)
    for stage, view in views_of(enc_dec, "attn_out"):
        assert_matrix(view.matrix, entry(enc_dec, f"{stage.site}.out"))


def test_layernorm_statistics_are_torchs(enc_dec):
    for stage, view in views_of(enc_dec, "addnorm"):
        prefix = f"{stage.layer}.norm{stage.norm}"
        x_in, x_out = enc_dec[f"{prefix}.in"].float(), enc_dec[f"{prefix}.out"].float()  # [T, d]
        before_mean, after_mean = (s.values for s in view.mean.series)
        before_var, after_var = (s.values for s in view.spread.series)
        np.testing.assert_allclose(before_mean, x_in.mean(-1).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(before_var, x_in.var(-1, unbiased=False).numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(after_mean, x_out.mean(-1).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(after_var, x_out.var(-1, unbiased=False).numpy(), rtol=1e-4, atol=1e-6)
        # post-norm (the default): F(x) | x + F(x) | LayerNorm(x + F(x)), each the recorded entry
        assert view.placement == "post" and view.norm_kind == "layernorm"
        assert [s.name for s in view.slots] == [view.sublayer, f"{prefix}.in", f"{prefix}.out"]
        for slot in view.slots:
            assert_matrix(slot, entry(enc_dec, slot.name))
        assert view.spread.title == "variance per token" and view.mean.series[0].label == "input"


def test_pre_norm_and_residual_off_change_the_slots_and_notes(tiny_model):
    trace = tiny_model("encoder-decoder", n_encoder_layers=1).trace(SRC, TGT, RunOptions(norm="pre", residual=False))
    stage, view = views_of(trace, "addnorm")[0]
    assert view.placement == "pre" and view.residual_off
    assert [s.name for s in view.slots] == [f"{stage.layer}.norm1.in", f"{stage.layer}.norm1.out", view.resid]
    assert view.note.text.startswith("The residual connection is switched OFF")
    assert view.note.alternatives == (view.note.text,)  # the longest text the toggle gives is reserved
    assert view.heading.text in view.heading.alternatives


def test_rmsnorm_spread_is_the_rms_it_divides_by(llama_like):
    eps = 1e-5
    for stage, view in views_of(llama_like, "addnorm"):
        x_in = llama_like[f"{stage.layer}.norm{stage.norm}.in"].float()  # [T, d]
        rms = torch.sqrt(x_in.pow(2).mean(-1) + eps)
        np.testing.assert_allclose(view.spread.series[0].values, rms.numpy(), rtol=1e-4)
        assert view.norm_kind == "rmsnorm" and view.spread.title == "RMS per token"
        assert view.mean.title == "mean per token (not subtracted)" and "No mean is subtracted" in view.note.text


def test_ffn_relu_zeros_and_gated_parts(enc_dec, llama_like):
    for stage, view in views_of(enc_dec, "ffn"):
        hidden = entry(enc_dec, f"{stage.layer}.ffn.hidden")
        assert_matrix(view.hidden, hidden)
        assert_matrix(view.out, entry(enc_dec, f"{stage.layer}.ffn.out"))
        assert view.activation == "relu" and not view.gated and view.gate is None
        np.testing.assert_array_equal(view.hidden.masked, hidden == 0)
        assert view.zero_share == pytest.approx(np.count_nonzero(hidden == 0) / hidden.size)
        assert f"{view.zero_share:.0%} of hidden units are exactly 0" in view.summary
    for stage, view in views_of(llama_like, "ffn"):
        assert view.gated and view.activation == "silu" and view.hidden.masked is None
        assert_matrix(view.gate, entry(llama_like, f"{stage.layer}.ffn.gate"))
        assert_matrix(view.up, entry(llama_like, f"{stage.layer}.ffn.up"))
        silu = torch.nn.functional.silu(llama_like[f"{stage.layer}.ffn.gate"].float())
        np.testing.assert_allclose(
            view.hidden.matrix, (silu * llama_like[f"{stage.layer}.ffn.up"]).numpy(), rtol=1e-5, atol=1e-6
        )


def test_missing_entries_become_one_sentence(enc_dec):
    for kind in ("qkv", "weights", "mask", "context", "addnorm", "ffn"):
        stage = next(s for s in stages_for(enc_dec) if s.kind == kind)
        ghost = Stage(
            stage.key,
            kind,
            stage.title,
            stage.group,
            site="enc.7.self" if stage.site else None,
            layer="enc.7" if stage.layer else None,
            norm=stage.norm,
        )
        view = view_for(enc_dec, ghost, ViewState())
        assert isinstance(view, MessageView) and "is not in this run" in view.message, kind


def test_a_kind_without_a_view_model_is_named():
    with pytest.raises(ValueError, match="no view-model for stage kind 'nope'"):
        view_for(None, Stage("x", "nope", "t", "g"), ViewState())


def test_the_additive_models_name_and_its_menu_words_agree():
    assert words.word("additive") == ADDITIVE_TITLE


def test_layernorm_vs_batchnorm_are_torchs_norms(enc_dec):
    from attnlab.present.norm_compare import EPS

    for stage, view in views_of(enc_dec, "norm_vs_batch"):
        x = enc_dec[f"{stage.layer}.norm{stage.norm}.in"].float()  # [T, d]
        ln = torch.nn.functional.layer_norm(x, (x.shape[1],), eps=EPS)
        bn = torch.nn.functional.batch_norm(x, None, None, training=True, eps=EPS)  # statistics over the T tokens
        np.testing.assert_allclose(view.ln.matrix, ln.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(view.bn.matrix, bn.numpy(), rtol=1e-4, atol=1e-5)
        assert view.ln.matrix.dtype == np.float32 and view.ln.matrix.flags.c_contiguous
        assert f"add & norm {stage.norm}" in view.heading


def test_scaling_explainer_reads_the_sites_scores(enc_dec):
    stage, view = next((s, v) for s, v in views_of(enc_dec, "scale_why") if s.site == "enc.0.self")
    scores = entry(enc_dec, "enc.0.self.scores")  # [H, Tq, Tk], no mask on the encoder
    assert view.stats.d_k == 8 and "dₖ = 8, √dₖ ≈ 2.83" in view.heading
    np.testing.assert_allclose(np.sort(view.stats.raw), np.sort(scores.ravel()), rtol=1e-6)
    np.testing.assert_allclose(np.sort(view.stats.scaled), np.sort(scores.ravel()) / np.sqrt(8), rtol=1e-5)
    assert view.head_ticks == [(0, "head 1"), (1, "head 2"), (2, "head 3"), (3, "head 4")]
    assert f"{view.stats.std_raw:.2f} raw" in view.note


def test_heads_grid_holds_every_heads_weights(enc_dec):
    for stage, view in views_of(enc_dec, "heads", ViewState(head=2)):
        weights = entry(enc_dec, f"{stage.site}.weights")  # [H, Tq, Tk]
        np.testing.assert_array_equal(view.weights, weights)
        assert view.weights.dtype == np.float32 and view.weights.flags.c_contiguous
        assert view.head == 2 and view.n_heads == 4 and view.title.startswith("all 4 heads")
        blocked = np.isneginf(entry(enc_dec, f"{stage.site}.mask"))
        if blocked.any():
            np.testing.assert_array_equal(view.masked, blocked)
        else:
            assert view.masked is None
