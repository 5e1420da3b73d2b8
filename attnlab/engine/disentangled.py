"""DeBERTa-v2/v3's disentangled attention: the position terms added to an encoder site's content scores.

    score(i, j) = ( Qc_i · Kc_j  +  Qc_i · Kr_δ(i,j)  +  Kc_j · Qr_δ(i,j) ) / √(dk · (1 + number of terms))
                    content→content  content→position    position→content

Kr = R W_K' and Qr = R W_Q' are the relative embedding table R [2k, d] (after its own LayerNorm) through the
position projections (W_K' = W_K and W_Q' = W_Q when share_att_key), split into the run's heads. δ(i, j) is
the row of R that distance i - j reads: i - j (log-bucketed past k/2 when position_buckets is set), shifted by
k and clamped to [0, 2k - 1]. p2c is computed key by key: key j against row clamp(-bucket(j - i) + k), the
map then transposed; as bucket(-x) = -bucket(x) that is cell (i, j)'s row δ(i, j) again (the paper writes
δ(j, i) for the distance seen from the key). The arithmetic is transformers' DisentangledSelfAttention
(modeling_deberta_v2.py: build_relative_position, make_log_bucket_position, disentangled_attention_bias).

Shapes: B batch, H heads, T tokens, dk = d/H, k = rel_span.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.attention_weights import AttentionWeights
from attnlab.engine.derived import Derived
from attnlab.engine.norms import LayerNorm
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import RelativeInputs
from attnlab.engine.score_step import Mechanism

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.context import RunContext
    from attnlab.engine.options import RunOptions


def log_bucket(distance: Tensor, buckets: int, max_distance: int) -> Tensor:
    """transformers' make_log_bucket_position: distances within ±buckets/2 kept, larger ones log-spaced so that
    max_distance lands on the last bucket. long [..] -> float [..] (whole numbers)."""
    sign = torch.sign(distance)
    mid = buckets // 2
    inside = (distance < mid) & (distance > -mid)
    magnitude = torch.where(inside, torch.tensor(mid - 1).type_as(distance), torch.abs(distance))
    log_pos = torch.ceil(torch.log(magnitude / mid) / math.log((max_distance - 1) / mid) * (mid - 1)) + mid
    return torch.where(magnitude <= mid, distance.type_as(log_pos), log_pos * sign)


def bucketed_distance(T: int, config: ModelConfig, device: torch.device) -> Tensor:
    """long [T, T]: query position i minus key position j, log-bucketed when the model has position_buckets."""
    pos = torch.arange(T, dtype=torch.long, device=device)
    distance = pos[:, None] - pos[None, :]  # [T, T]
    if config.rel_buckets > 0 and config.rel_max_distance > 0:
        distance = log_bucket(distance, config.rel_buckets, config.rel_max_distance)
    return distance.to(torch.long)


class RelativeTable(nn.Module):
    """The relative embeddings R [2k, d] (transformers' encoder.rel_embeddings) and their LayerNorm."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.span = config.rel_span
        self.config = config
        self.embed = nn.Embedding(2 * config.rel_span, config.d_model)
        self.norm = LayerNorm(config.d_model, config.layer_norm_eps) if config.rel_norm else None

    def forward(self, T: int, ctx: RunContext, stack: str = "enc") -> RelativeInputs | None:
        """The run's RelativeInputs for T tokens, recorded once; None when the positions are switched off."""
        if not ctx.options.positional:
            return None
        table = self.embed.weight[None]  # [1, 2k, d]
        if self.norm is not None:
            table = self.norm(table, ctx.rec, names.rel_entry(stack, "norm"))
        distance = bucketed_distance(T, self.config, table.device)  # [T, T]
        k = self.span
        c2p_rows = torch.clamp(distance + k, 0, 2 * k - 1)  # [T, T]
        p2c_rows = torch.clamp(-distance + k, 0, 2 * k - 1)  # [T, T]
        ctx.rec(names.rel_entry(stack, "table"), table[0], batched=False)
        ctx.rec(names.rel_entry(stack, "distance"), distance, batched=False)
        return RelativeInputs(table[0], c2p_rows, p2c_rows)


def add_position_projections(attention: AttentionWeights, config: ModelConfig) -> None:
    """Give an encoder attention sub-layer DeBERTa's position projections W_K' (pos_key_proj, for c2p) and
    W_Q' (pos_query_proj, for p2c); none when share_att_key (W_K and W_Q serve) or the model has no terms."""
    terms = config.disentangled
    attention.rel_terms = terms
    shared = config.rel_share_key or not terms
    d = config.d_model
    attention.w_pk = nn.Linear(d, d) if "c2p" in terms and not shared else None
    attention.w_pq = nn.Linear(d, d) if "p2c" in terms and not shared else None


def _heads(x: Tensor, n_heads: int) -> Tensor:
    """[2k, d] -> [H, 2k, dk]: a projected table split into the run's heads, as Q and K are."""
    return x.reshape(x.shape[0], n_heads, -1).transpose(0, 1)


def position_terms(
    attention: AttentionWeights,
    q: Tensor,
    k: Tensor,
    relative: RelativeInputs | None,
    projections: bool,
    rec: Recorder,
    prefix: str,
) -> Tensor | None:
    """The position terms of one site, summed, before the division by √(dk · scale factor): [B, H, T, T];
    None when the run has no relative inputs (positions off). q, k [B, H, T, dk] (content). Records the site's
    terms (names.term_entries): c2c derived from Q and K on read, c2p and p2c stored (a term the model does
    not have, or a run without positions, records none)."""
    recorded: list[tuple[str, Tensor | Derived]] = []
    if rec.enabled:
        n = names.site_entries(prefix)
        content = Derived("scores", (n.q, n.k))
        recorded.append(
            (names.term_entries(prefix)[0], rec.rule(q @ k.transpose(-1, -2), content) if rec.eager else content)
        )
    if relative is None:
        rec.add(recorded)
        return None
    B, H, T, _ = q.shape
    total: Tensor | None = None
    for term, name in zip(("c2p", "p2c"), names.term_entries(prefix)[1:], strict=True):
        if term in attention.rel_terms:
            value = one_term(attention, term, q if term == "c2p" else k, relative, projections)  # [B, H, T, T]
            recorded.append((name, value))
            total = value if total is None else total + value
    rec.add(recorded)
    return total


def one_term(
    attention: AttentionWeights, term: str, content: Tensor, relative: RelativeInputs, projections: bool
) -> Tensor:
    """c2p: Qc_i · Kr_δ(i,j) from the queries; p2c: Kc_j · Qr_δ(i,j) from the keys (gathered key by key).
    content [B, H, T, dk] (Q for c2p, K for p2c) -> [B, H, Tq, Tk]."""
    B, H, T, _ = content.shape
    if term == "c2p":
        proj, rows = (attention.w_pk or attention.w_k), relative.c2p_rows
    else:
        proj, rows = (attention.w_pq or attention.w_q), relative.p2c_rows
    table = relative.table  # [2k, d]
    position = _heads(proj(table) if projections else table, H)  # [H, 2k, dk]: Kr (c2p) or Qr (p2c)
    by_row = content @ position.transpose(-1, -2)  # [B, H, T, 2k]: each token against every relative row
    gathered = by_row.gather(-1, rows.expand(B, H, T, T))  # [B, H, T, T]: [i, j] reads row rows[i, j]
    return gathered if term == "c2p" else gathered.transpose(-1, -2)  # p2c was [key j, query i]


def scale_factor(config: ModelConfig) -> int:
    """1 + the number of position terms: DeBERTa divides every score by √(dk · this)."""
    return 1 + len(config.disentangled)


def trace_floats(config: ModelConfig, T: int, heads: int, positional: bool = True, per_site: bool = True) -> int:
    """What disentangled attention adds to a recorded trace: per encoder site the stored scores, c2p and p2c
    [H, T, T] (such sites are recorded step by step, layers.attend); once the table, its norm and the
    distances.
    `per_site=False`: only these (a lean run's, engine/replay.py).
    Nothing with the positions off (the sites are then recorded like any other)."""
    if not config.disentangled or not positional:
        return 0
    table = 2 * config.rel_span * config.d_model * (2 if config.rel_norm else 1)
    return per_site * config.n_encoder_layers * (1 + len(config.disentangled)) * heads * T * T + table + T * T


class _Disentangled(Mechanism):
    """DeBERTa's registration: the position projections of each encoder sub-layer, the terms added to the
    scores, the division by √(1 + terms), the term stages after Q, K, V, and what the trace stores."""

    name = "disentangled"

    def build(self, attention: nn.Module, config: ModelConfig) -> None:
        add_position_projections(cast("AttentionWeights", attention), config)

    def has_terms(self, config: ModelConfig) -> bool:
        return bool(config.disentangled)

    def divisor(self, config: ModelConfig) -> float:
        return math.sqrt(scale_factor(config))  # √(dk · (1 + terms)) = √dk · √(1 + terms)

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
        return position_terms(site, q, k, relative, projections, rec, prefix) if site.rel_terms else None

    def trace_floats(self, config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, lean: bool) -> int:
        if not config.has_encoder:
            return 0
        return trace_floats(config, src_len, options.effective_heads(config), options.positional, not lean)

    def stepwise(self, config: ModelConfig, options: RunOptions) -> bool:
        return bool(config.disentangled) and options.positional


MECHANISM = _Disentangled()
