"""The head-roles map, the sink page and the neuron view as plain data (present/head_roles.py), checked against
the trace's own numbers in plain torch."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.present import head_roles
from tests.support.tiny import build_tiny_model


@pytest.fixture(scope="module")
def run():
    live = build_tiny_model("decoder-only")
    return live, live.trace(tgt="the black cat sees the small dog")


def test_the_map_has_a_cell_per_head_and_opens_its_weights(run):
    live, trace = run
    view = head_roles.head_roles(live, trace)
    assert [m.name for m in view.maps] == [
        f"head_roles.{s}" for s in ("entropy", "sink", "previous", "induction", "distance")
    ]
    for m in view.maps:
        assert m.matrix.shape == (2, 4) and m.rows == ["layer 0", "layer 1"]
    assert view.stage_keys == ("dec.0.self.weights", "dec.1.self.weights")
    sink = view.maps[1].matrix
    w = trace["dec.1.self.weights"]
    assert abs(float(sink[1, 2]) - float(w[2, :, 0].mean())) < 1e-6
    assert not math.isnan(float(view.maps[3].matrix[0, 0]))  # the induction probe ran


def test_the_probe_repeats_after_the_start_token(run):
    live, _trace = run
    probe = head_roles.probe_trace(live, length=6)
    ids = probe["tgt.ids"].reshape(-1).tolist()
    assert ids[0] == live.tokenizer("tgt").specials.start_id and ids[1:7] == ids[7:13]


def test_the_sink_what_if_drops_the_start_token_and_adds_it_back(run):
    live, trace = run
    what, dropped = head_roles.sink_what_if(live, trace)
    assert "without" in what
    assert dropped["tgt.ids"].reshape(-1).tolist() == trace["tgt.ids"].reshape(-1).tolist()[1:]
    what, added = head_roles.sink_what_if(live, dropped)
    assert "put first" in what
    assert torch.allclose(added["dec.0.self.weights"], trace["dec.0.self.weights"], atol=1e-6)  # the same run again


def test_the_sink_page_names_the_first_token(run):
    _live, trace = run
    page = head_roles.sink_page(trace, "dec.0.self")
    assert page.column.matrix.shape == (4, 8) and page.column.cols[0] == "<s>"
    assert torch.allclose(torch.from_numpy(page.column.matrix), trace["dec.0.self.weights"][..., 0])
    assert "<s>" in page.notes[0]


def test_the_neuron_view_bars_sum_to_the_score(run):
    _live, trace = run
    view = head_roles.neuron_view(trace, "dec.1.self", 3, 5, 2)
    q, k = trace["dec.1.self.q"][3, 5], trace["dec.1.self.k"][3, 2]
    assert torch.allclose(torch.from_numpy(view.products), q * k)
    assert abs(float(view.products.sum()) - float(trace["dec.1.self.scores"][3, 5, 2])) <= 1e-5
    assert len(view.labels) == q.numel() and "sum to the score" in view.notes[0]
