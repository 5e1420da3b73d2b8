"""BERT's relative_key / relative_key_query positions (config.json position_embedding_type): terms added to an
encoder site's Q Kᵀ before the division by √dₖ, read from each layer's learned distance table R [2M − 1, dk]
(transformers 4.x BertSelfAttention.distance_embedding; M = max_position_embeddings):

    score(i, j) = ( Q_i · K_j  +  Q_i · R[i − j + M − 1]  [ +  K_j · R[i − j + M − 1] ] ) / √dk
                                  rel_key (both types)       rel_query (relative_key_query only)

R is dk wide and shared by every head of its layer; no absolute positions are added to the embeddings. The
terms ride on the same plumbing as DeBERTa's (layers.attend `terms`): a recording run takes attention_steps
(the scores are stored), one that records nothing folds them into the fused kernel's mask.

Shapes: B batch, H heads, T tokens, dk = d/H, M = rel_key_span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.attention_weights import AttentionWeights
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import RelativeInputs
from attnlab.engine.score_step import Mechanism

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.context import RunContext
    from attnlab.engine.options import RunOptions

TERMS = {"key": ("rel_key",), "key_query": ("rel_key", "rel_query")}  # ModelConfig.rel_key_terms -> the terms


def terms_of(config: ModelConfig) -> tuple[str, ...]:
    """The relative terms of this model, in the order they are added: () for every model but such a BERT."""
    return TERMS.get(config.rel_key_terms, ())


def add_distance_table(attention: AttentionWeights, config: ModelConfig) -> None:
    """Give an attention sub-layer BERT's distance table R [2M − 1, dk] (distance_embedding), or None."""
    attention.rel_key_terms = terms_of(config)
    attention.distance_embedding = (
        nn.Embedding(2 * config.rel_key_span - 1, config.d_head) if terms_of(config) else None
    )


def run_inputs(
    T: int, config: ModelConfig, ctx: RunContext, device: torch.device, stack: str = "enc"
) -> RelativeInputs | None:
    """The rows of R each cell (i, j) reads, i − j + M − 1, recorded once as the distance i − j; None when the
    model has no such terms or the positions are switched off. The table is per layer, so `table` is empty."""
    if not terms_of(config) or not ctx.options.positional:
        return None
    pos = torch.arange(T, dtype=torch.long, device=device)
    distance = pos[:, None] - pos[None, :]  # [T, T]: query position i minus key position j
    rows = distance + config.rel_key_span - 1  # [T, T]: 0 … 2M − 2
    ctx.rec(names.rel_entry(stack, "distance"), distance, batched=False)
    return RelativeInputs(torch.empty(0, device=device), rows, rows)


def key_terms(
    attention: AttentionWeights, q: Tensor, k: Tensor, relative: RelativeInputs | None, rec: Recorder, prefix: str
) -> Tensor | None:
    """The site's relative terms, summed, before the division by √dk: [B, H, T, T]; None with the positions
    off. q, k [B, H, T, dk]. Records each term (names.key_term_entries)."""
    table = attention.distance_embedding
    if relative is None or table is None:
        return None
    r = table(relative.c2p_rows).to(q.dtype)  # [Tq, Tk, dk]: R[i − j + M − 1]
    rel_key = torch.einsum("bhid,ijd->bhij", q, r)  # [B, H, Tq, Tk]: Q_i · R(i − j)
    recorded: list[tuple[str, Tensor]] = [(names.key_term_entries(prefix)[0], rel_key)]
    total = rel_key
    if len(attention.rel_key_terms) > 1:
        rel_query = torch.einsum("bhjd,ijd->bhij", k, r)  # [B, H, Tq, Tk]: K_j · R(i − j)
        recorded.append((names.key_term_entries(prefix)[1], rel_query))
        total = rel_key + rel_query
    if rec.enabled:
        rec.add(recorded)
    return total


def trace_floats(config: ModelConfig, T: int, heads: int, positional: bool = True, per_site: bool = True) -> int:
    """What the terms add to a recorded trace: per encoder site the stored scores and each term [H, T, T]
    (such sites are recorded step by step); once the distances.
    `per_site=False`: only these (a lean run's, engine/replay.py). Nothing with the positions off."""
    if not terms_of(config) or not positional:
        return 0
    return per_site * config.n_encoder_layers * (1 + len(terms_of(config))) * heads * T * T + T * T


class _RelativeKey(Mechanism):
    """BERT relative_key's registration: each encoder sub-layer's distance table, the terms added to the
    scores, their stages after Q, K, V, and what the trace stores."""

    name = "relative_key"

    def has_terms(self, config: ModelConfig) -> bool:
        return bool(terms_of(config))

    def build(self, attention: nn.Module, config: ModelConfig) -> None:
        add_distance_table(cast("AttentionWeights", attention), config)

    def terms(
        self,
        attention: nn.Module,
        q: Tensor,
        k: Tensor,
        relative: RelativeInputs | None,
        projections: bool,
        rec: Recorder,
        prefix: str,
    ) -> Tensor | None:
        site = cast("AttentionWeights", attention)
        return key_terms(site, q, k, relative, rec, prefix) if site.rel_key_terms else None

    def trace_floats(self, config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, lean: bool) -> int:
        if not config.has_encoder:
            return 0
        return trace_floats(config, src_len, options.effective_heads(config), options.positional, not lean)

    def stepwise(self, config: ModelConfig, options: RunOptions) -> bool:
        return bool(terms_of(config)) and options.positional


MECHANISM = _RelativeKey()
