"""The neuron view (engine/qk_dims.py): q ⊙ k per dimension sums to the recorded score for GPT-2, Llama (grouped
K/V heads and rotary positions) and BERT layouts built by transformers from config objects; and the sink facts
against their definitions in plain torch."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.checkpoints.hf import convert
from attnlab.engine import qk_dims
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder
from tests.support.hf_tiny import CASES, IDS, hf_forward
from tests.support.recorded import finished

TOL = 1e-5


def run(case_name: str):
    case = CASES[case_name]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    rec = Recorder(True)
    ids = torch.tensor([IDS])
    with torch.inference_mode():
        module(ids if config.has_encoder else None, None if config.has_encoder else ids, rec=rec)
    return case, model, finished(rec, config, RunOptions())


@pytest.mark.parametrize("case_name", ["gpt2", "llama", "bert"])
def test_the_bars_sum_to_the_score(case_name):
    case, model, trace = run(case_name)
    site = "enc.1.self" if case.arch == "encoder-only" else "dec.1.self"
    weights = trace[f"{site}.weights"]
    theirs = hf_forward(case, model).attentions[1][0]  # transformers' own weights of this layer [H, T, T]
    # the weights transformers computes (rotary applied for Llama) come from the recorded Q and K: the bars are of
    # the vectors that made the scores
    assert float((weights - theirs).abs().max()) < 1e-4
    n_heads, t = weights.shape[:2]
    checked = 0
    for head in range(n_heads):
        for query in range(t):
            for key in range(query + 1 if case.arch != "encoder-only" else t):
                cell = qk_dims.score_dims(trace, site, head, query, key)
                assert abs(float(cell.products.sum()) - cell.score) <= TOL, (head, query, key)
                assert abs(cell.rest) <= TOL
                assert math.isclose(cell.divisor, math.sqrt(cell.q.numel()), rel_tol=1e-4)
                assert abs(cell.score / cell.divisor - cell.scaled) <= TOL
                checked += 1
    assert checked > 0
    if case_name == "llama":  # 4 query heads share 2 K/V heads: heads 0, 1 read K head 0, heads 2, 3 K head 1
        assert [qk_dims.score_dims(trace, site, h, 3, 1).kv_head for h in range(4)] == [0, 0, 1, 1]


def test_sink_facts_follow_their_definitions():
    _case, _model, trace = run("gpt2")
    facts = qk_dims.sink_facts(trace, "dec.0.self")
    w, v = trace["dec.0.self.weights"], trace["dec.0.self.v"]  # [H, T, T], [H, T, dk]
    for h in range(w.shape[0]):
        norms = [float(torch.linalg.vector_norm(v[h, j])) for j in range(v.shape[1])]
        assert abs(float(facts.v0_norm[h]) - norms[0]) < 1e-5
        assert abs(float(facts.v_rest_norm[h]) - sum(norms[1:]) / (len(norms) - 1)) < 1e-5
        shares = [
            float(w[h, i, 0]) * norms[0] / sum(float(w[h, i, j]) * norms[j] for j in range(len(norms)))
            for i in range(w.shape[1])
        ]
        assert abs(float(facts.share[h]) - sum(shares) / len(shares)) < 1e-5
        assert abs(float(facts.mass[h]) - float(w[h, :, 0].mean())) < 1e-6
