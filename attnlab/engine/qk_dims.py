"""Which dimensions make a score (BertViz's neuron view) and what the first position's values weigh (the sink).

A head's score for query i and key j is qᵢ · kⱼ = Σ_d qᵢ[d] kⱼ[d]: the recorded Q and K entries are the ones the
scores were made from (after QK-norm and rotary positions: engine/layers.py records them after `apply_rotary`), so
the products q ⊙ k [dk] sum to the recorded score. A grouped-query head reads the K head `kv_head_map` names. What
the scores add besides Q Kᵀ (DeBERTa's and BERT's relative-position terms) is `rest`; the division by √dk (and
GPT-2's layer divisor) is `divisor`, shown apart from the bars.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from attnlab.engine import names

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


@dataclass(frozen=True)
class ScoreDims:
    """One (query, key) cell of one head: the products q ⊙ k per dimension and what they add up to."""

    q: torch.Tensor  # [dk] the query's vector
    k: torch.Tensor  # [dk] the key's vector
    products: torch.Tensor  # [dk] q ⊙ k; their sum is the dot product
    score: float  # the recorded score (the dot product plus `rest`)
    rest: float  # what the score adds beyond q · k (relative-position terms; 0 for plain attention)
    scaled: float  # the recorded scaled score (score / divisor)
    divisor: float  # √dk · the layer's divisor when scaling is on, else 1
    kv_head: int  # the K head this head reads


def score_dims(trace: Trace, site: str, head: int, query: int, key: int) -> ScoreDims:
    """q ⊙ k of `head` at (`query`, `key`) of `site` ("dec.0.self"), from the run's recorded Q, K and scores."""
    n = names.site_entries(site)
    kv_head = trace.kv_head_map[head]
    q = trace[n.q][head, query].float()  # [dk]
    k = trace[n.k][kv_head, key].float()  # [dk]
    products = q * k  # [dk]
    score = float(trace[n.scores][head, query, key])
    scaled = float(trace[n.scaled][head, query, key])
    divisor = score / scaled if scaled != 0 and trace.options.scale else 1.0
    return ScoreDims(q, k, products, score, score - float(products.double().sum()), scaled, divisor, kv_head)


@dataclass(frozen=True)
class SinkFacts:
    """What a site's heads give the first position: per head [H] unless said."""

    column: torch.Tensor  # [H, Tq] the weight each query puts on the first position
    mass: torch.Tensor  # [H] its mean over the queries
    v0_norm: torch.Tensor  # [H] ‖v₀‖, the first position's value vector's length
    v_rest_norm: torch.Tensor  # [H] the mean ‖vⱼ‖ over the other positions
    share: torch.Tensor  # [H] the first position's share of Σⱼ wᵢⱼ ‖vⱼ‖, averaged over the queries


def sink_facts(trace: Trace, site: str) -> SinkFacts:
    """How much each head of `site` looks at the first position and how much that look carries: a head can put
    most of its weight on token 0 and still add almost nothing when ‖v₀‖ is small (weight × ‖v‖ is what reaches
    the context vector's size)."""
    n = names.site_entries(site)
    w = trace[n.weights].float()  # [H, Tq, Tk]
    v = trace[n.v].float()  # [H_kv, Tk, dk]
    v = v[names.kv_head_map(w.shape[0], v.shape[0])]  # [H, Tk, dk]: each Q head's V head
    norms = v.norm(dim=-1)  # [H, Tk]
    carried = w * norms[:, None, :]  # [H, Tq, Tk]: weight × ‖vⱼ‖
    share = (carried[..., 0] / carried.sum(-1).clamp_min(1e-30)).mean(-1)  # [H]
    rest = norms[:, 1:].mean(-1) if norms.shape[1] > 1 else torch.zeros(w.shape[0])  # [H]
    return SinkFacts(w[..., 0], w[..., 0].mean(-1), norms[:, 0], rest, share)
