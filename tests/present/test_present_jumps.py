"""Layer / sub-layer jumps and the stage search over a real stage list (present/stages.py, Qt-free)."""

from __future__ import annotations

import pytest

from attnlab.present.stage_jumps import layer_jump, search_stages, sublayer_jump
from attnlab.present.stages import stages_for


@pytest.fixture(scope="module")
def stages(tiny_model):
    return stages_for(tiny_model().trace("the black cat", "le chat"))


def test_layer_jump_reaches_every_group_start_in_order(stages):
    key, seen = stages[0].key, [stages[0].group]
    while (key := layer_jump(stages, key, +1)) is not None:
        stage = next(s for s in stages if s.key == key)
        assert stage.group != seen[-1]
        seen.append(stage.group)
    groups = list(dict.fromkeys(s.group for s in stages))
    assert seen == groups


def test_layer_jump_backwards_goes_to_own_start_then_previous(stages):
    second_group = next(s for s in stages if s.group != stages[0].group).group
    inside = [s for s in stages if s.group == second_group]
    assert layer_jump(stages, inside[3].key, -1) == inside[0].key
    assert layer_jump(stages, inside[0].key, -1) == stages[0].key
    assert layer_jump(stages, stages[0].key, -1) is None
    assert layer_jump(stages, stages[-1].key, +1) is None


def test_sublayer_jump_from_mid_attention_goes_to_the_add_and_norm(stages):
    weights = next(s for s in stages if s.kind == "weights")
    target = next(s for s in stages if s.key == sublayer_jump(stages, weights.key, +1))
    assert target.kind == "addnorm" and target.layer == weights.site.rsplit(".", 1)[0]
    # and back: the start of the attention site (its Q, K, V), then the block before it
    qkv = sublayer_jump(stages, weights.key, -1)
    assert qkv == f"{weights.site}.qkv" or next(s for s in stages if s.key == qkv).kind == "qkv"
    assert sublayer_jump(stages, target.key, -1) == qkv


def test_search_matches_all_words_in_order(stages):
    hits = search_stages(stages, "decoder SOFTMAX")
    assert hits and all("softmax" in s.title.lower() and "decoder" in s.group.lower() for s in hits)
    assert [s.key for s in search_stages(stages, "")] == [s.key for s in stages]
    assert search_stages(stages, "no such stage zzz") == []
