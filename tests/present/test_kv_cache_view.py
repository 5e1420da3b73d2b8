"""The KV-cache stage's view-model and the generation timeline (present/views/kv_cache.py, present/timeline.py)
against the traces LiveModel.generate makes and a whole-sequence run."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.engine import names
from attnlab.present.stage_types import KV_CACHE, ViewState
from attnlab.present.stages import stages_for
from attnlab.present.timeline import Timeline
from attnlab.present.views.kv_cache import KVCacheView, kv_cache_view
from tests.support.tiny import build_tiny_model

SITE = names.site(names.layer("dec", 1), "self")


def generated(n: int = 4, **changes):
    model = build_tiny_model("decoder-only", never_ends=True, **changes)
    return model, list(model.generate("the black cat sees the small dog", max_new_tokens=n))


def stage_of(trace):
    return next(s for s in stages_for(trace) if s.kind == KV_CACHE and s.site == SITE)


def test_the_view_says_what_was_reused_and_what_is_new():
    model, steps = generated(n_kv_heads=2)  # 4 query heads, 2 cached heads
    prefill, last = (kv_cache_view(t, stage_of(t), ViewState(head=3)) for t in (steps[0], steps[-1]))
    assert isinstance(prefill, KVCacheView) and isinstance(last, KVCacheView)
    prompt = steps[0].info["rows"][1]
    assert (prefill.reused, prefill.new) == (0, prompt)
    assert (last.reused, last.new) == (prompt + 2, 1)
    assert last.groups == [[0, 1], [2, 3]] and last.kv_head == 1  # query head 3 reads cached head 1
    k = steps[-1][names.site_entry(SITE, "k")]  # the cache as the step read it: [H_kv, t + 1, dk]
    assert np.array_equal(last.k.matrix, k[1].numpy())
    assert [label.endswith("← new") for label in last.k.rows] == [False] * (prompt + 2) + [True]
    layers = model.config.n_decoder_layers
    assert last.cache_bytes == 2 * layers * k.numel() * k.element_size()


def test_a_whole_run_shows_the_cache_at_the_timelines_step():
    model = build_tiny_model("decoder-only", n_kv_heads=2)
    trace = model.trace(tgt="the black cat sees the small dog")
    stage = stage_of(trace)
    shown = kv_cache_view(trace, stage, ViewState(upto=3))
    assert isinstance(shown, KVCacheView) and (shown.position, shown.reused, shown.new) == (3, 3, 1)
    assert np.array_equal(shown.k.matrix, trace[names.site_entry(SITE, "k")][0, :4].numpy())
    assert kv_cache_view(trace, stage, ViewState()).position == len(trace["tgt.tokens"]) - 1  # -1: the last


def test_the_timeline_grows_a_row_per_step_and_ends_as_the_whole_map():
    # 13 rows: a CPU matrix product of fewer than 12 rows rounds its last rows apart (kv_cache.WHOLE_ROWS)
    model, steps = generated(6)
    timeline = Timeline(steps)
    whole = model.trace(tgt=steps[-1].info["ids"][:-1])  # every row the steps computed
    final = timeline.map_at(len(steps) - 1, SITE, 2)
    expected = whole.read(names.site_entry(SITE, "weights"), 2).numpy()
    assert np.array_equal(final, expected)  # bit for bit (engine/row_stable.py)
    sizes = [timeline.map_at(k, SITE, 2).shape[0] for k in range(len(steps))]
    assert sizes == [sizes[0] + k for k in range(len(steps))]
    assert torch.equal(torch.from_numpy(timeline.map_at(1, SITE, 2)), torch.from_numpy(final[: sizes[1], : sizes[1]]))
