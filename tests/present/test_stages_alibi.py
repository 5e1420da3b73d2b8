"""Every panel of a model with ALiBi shows exactly the trace's numbers: the bias stage the chosen head's bias
B = m_h · j (recomputed here from transformers' build_alibi_tensor), the scores after it scaled + B; every
other stage as tests/present/test_stages.py checks it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.engine.options import RunOptions
from attnlab.present.stages import ViewState, stages_for
from tests.present.test_stages import check_stage, np_, panel_cache, panels  # noqa: F401  (fixtures)

transformers = pytest.importorskip("transformers")
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402

ALIBI = {"positional": "none", "position_bias": "alibi", "n_heads": 4, "norm_first": True, "final_norm": True}


@pytest.mark.parametrize("options", [RunOptions(), RunOptions(scale=False), RunOptions(n_heads=2)])
def test_every_stage_of_an_alibi_model_shows_the_traces_data(panels, tiny_model, options):  # noqa: F811
    model = tiny_model("decoder-only", **ALIBI)
    trace = model.trace(None, "the black cat sees the small dog", options)
    view = ViewState(head=1, top_k=5)
    stages = stages_for(trace)
    assert {"bias", "biased"} <= {s.kind for s in stages}
    for stage in stages:
        panel = panels(stage.kind)
        panel.show_stage(trace, stage, view)
        data = panel.shown_data()
        assert "message" not in data, (stage.key, data.get("message"))
        if stage.kind == "input":  # no position table: check_stage's "pos" half does not apply
            np.testing.assert_array_equal(data["matrix"], np_(trace, "tgt.input"))
            continue
        if stage.kind not in ("bias", "biased"):
            check_stage(trace, stage, data, view)
            continue
        assert data["head"] == 1 and data["kind"] == stage.kind
        site = stage.site
        if stage.kind == "bias":
            T = np_(trace, f"{site}.q").shape[1]
            heads = trace.options.heads
            theirs = build_alibi_tensor(torch.ones(1, T, dtype=torch.long), heads, torch.float32)  # [H, 1, T]
            np.testing.assert_array_equal(data["matrix"], theirs.reshape(heads, T)[1].expand(T, T).numpy())
        else:
            expected = np_(trace, f"{site}.scaled")[1] + np_(trace, f"{site}.bias")[1]
            np.testing.assert_array_equal(data["matrix"], expected)


def test_positions_off_the_bias_panels_say_so(panels, tiny_model):  # noqa: F811
    trace = tiny_model("decoder-only", **ALIBI).trace(None, "the black cat", RunOptions(positional=False))
    for stage in stages_for(trace):
        if stage.kind in ("bias", "biased"):
            panel = panels(stage.kind)
            panel.show_stage(trace, stage, ViewState())
            assert panel.shown_data().get("message"), stage.key


T5_BIAS = {"positional": "learned", "position_bias": "t5", "relative_buckets": 8, "relative_max_distance": 6}


@pytest.mark.parametrize("arch", ["encoder-only", "decoder-only"])
def test_a_relative_bias_panel_draws_the_buckets_and_the_heads_numbers(panels, tiny_model, arch):  # noqa: F811
    """8 buckets up to distance 6 over 9+ tokens: exact and logarithmic buckets, bidirectional in the encoder."""
    from transformers.models.t5.modeling_t5 import T5Attention

    model = tiny_model(arch, **T5_BIAS)
    sentence = "the black cat sees the small dog and the cat"
    trace = model.trace(sentence, None, RunOptions()) if arch == "encoder-only" else model.trace(None, sentence)
    stack = "enc" if arch == "encoder-only" else "dec"
    table = getattr(model.module, f"{stack}_rel_bias").weight.detach()  # [8, H]
    for stage in [s for s in stages_for(trace) if s.kind in ("bias", "biased")]:
        panel = panels(stage.kind)
        panel.show_stage(trace, stage, ViewState(head=1))
        data = panel.shown_data()
        if stage.kind == "biased":
            site = stage.site
            np.testing.assert_array_equal(
                data["matrix"], np_(trace, f"{site}.scaled")[1] + np_(trace, f"{site}.bias")[1]
            )
            continue
        T = data["matrix"].shape[0]
        relative = torch.arange(T)[None, :] - torch.arange(T)[:, None]
        buckets = T5Attention._relative_position_bucket(relative, stack == "enc", 8, 6)
        np.testing.assert_array_equal(data["buckets"], buckets.numpy())
        np.testing.assert_array_equal(data["matrix"], table[buckets][..., 1].numpy())
