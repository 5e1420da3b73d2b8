"""The weights of one attention sub-layer, as the mechanisms that add to its scores read them.

layers.MultiHeadAttention is an AttentionWeights; the mechanism modules (disentangled.py, relative_key.py) give
it their tables and read them through this type, so they need not import layers.py, which imports them.
"""

from __future__ import annotations

from torch import nn


class AttentionWeights(nn.Module):
    """W_Q, W_K, W_V, W_O [out, in] (set by layers.MultiHeadAttention) and the tables a mechanism adds."""

    w_q: nn.Linear
    w_k: nn.Linear
    w_v: nn.Linear
    w_o: nn.Linear
    # DeBERTa's position terms and projections W_K', W_Q' (None when shared), set by make_attention
    rel_terms: tuple[str, ...] = ()
    w_pk: nn.Linear | None
    w_pq: nn.Linear | None
    # BERT's relative_key(_query) terms and distance table R [2M − 1, dk] (engine/relative_key.py)
    rel_key_terms: tuple[str, ...] = ()
    distance_embedding: nn.Embedding | None
