"""Per-head statistics of a recorded run: what role each self-attention head plays.

Five numbers per head, each a mean over the query rows of the head's attention weights w [H, T, T]:

- entropy: -Σⱼ wᵢⱼ ln wᵢⱼ (nats; 0 for a head that looks at one token, ln(i + 1) for a causal head spread evenly);
- sink mass: wᵢ₀, the weight on the first position;
- mean distance: Σⱼ wᵢⱼ |i − j| (positions);
- previous-token score and induction score: TransformerLens's `head_detector` scores, computed as its
  `compute_head_attention_similarity_score` computes them (error measure "mul": the weight on the detection
  pattern's cells over the whole weight; "abs": 1 − mean |w − pattern| · T, rounded there to 3 decimals, not
  here), with its `exclude_bos` (the first key column left out) and `exclude_current_token` (the diagonal left
  out). The previous-token pattern is the sub-diagonal (i, i − 1); the induction pattern marks key j + 1 for
  every earlier key j holding the query's token (TransformerLens's duplicate-token pattern shifted one key to the
  right), read on a repeated random sequence (`probe_ids`), where only an induction head can predict the second half.

Qt-free and pure torch; present/head_roles.py lays the numbers out as a layers × heads map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import torch

from attnlab.engine import names
from attnlab.engine.live_inputs import checked_ids
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder
from attnlab.engine.trace import Trace, finish

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel

STATS = ("entropy", "sink", "previous", "induction", "distance")
MEASURES = ("mul", "abs")


def previous_token_pattern(n: int) -> torch.Tensor:
    """[n, n]: 1 at (i, i − 1), as TransformerLens's `get_previous_token_head_detection_pattern`."""
    pattern = torch.zeros(n, n)
    pattern[1:, :-1] = torch.eye(n - 1)
    return pattern


def duplicate_token_pattern(ids: torch.Tensor) -> torch.Tensor:
    """[T, T]: 1 at (i, j) for j < i holding the same token as i (the duplicate-token pattern)."""
    same = (ids[:, None] == ids[None, :]).float()  # [T, T]
    return torch.tril(same, diagonal=-1)


def induction_pattern(ids: torch.Tensor) -> torch.Tensor:
    """[T, T]: 1 at (i, j + 1) for every earlier j holding token i (the duplicate pattern shifted one key to the
    right, nothing wrapping round into the first column), as TransformerLens's
    `get_induction_head_detection_pattern`."""
    duplicate = duplicate_token_pattern(ids)  # [T, T]
    shifted = torch.zeros_like(duplicate)
    shifted[:, 1:] = duplicate[:, :-1]
    return torch.tril(shifted)


def similarity(
    weights: torch.Tensor,
    pattern: torch.Tensor,
    *,
    exclude_bos: bool = False,
    exclude_current_token: bool = False,
    measure: str = "mul",
) -> torch.Tensor:
    """[H]: how well each head's weights [H, T, T] match `pattern` [T, T] (TransformerLens's similarity score).

    "mul": Σ w·pattern / Σ w over the kept cells; "abs": 1 − mean(|w − pattern| over the kept cells) · T."""
    if measure not in MEASURES:
        raise ValueError(f"the error measure must be one of {MEASURES}, not {measure!r}")
    n = weights.shape[-1]
    keep = torch.ones(n, n, dtype=weights.dtype, device=weights.device)  # [T, T]: 0 where a cell is left out
    if exclude_bos:
        keep[:, 0] = 0
    if exclude_current_token:
        keep.fill_diagonal_(0)
    pattern = pattern.to(weights)
    if measure == "mul":
        kept = weights * keep  # [H, T, T]
        return (kept * pattern).sum((-2, -1)) / kept.sum((-2, -1))
    diff = (weights - pattern).abs() * keep  # [H, T, T]
    return 1 - diff.mean((-2, -1)) * n


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """[H]: the mean over query rows of -Σⱼ w ln w (nats), a masked (0) weight adding nothing."""
    terms = torch.special.xlogy(weights, weights)  # [H, Tq, Tk]; 0 · ln 0 = 0
    return -terms.sum(-1).mean(-1)


def sink_mass(weights: torch.Tensor) -> torch.Tensor:
    """[H]: the mean over query rows of the weight on the first position."""
    return weights[..., 0].mean(-1)


def mean_distance(weights: torch.Tensor) -> torch.Tensor:
    """[H]: the mean over query rows of Σⱼ wᵢⱼ |i − j|."""
    tq, tk = weights.shape[-2:]
    gap = (torch.arange(tq)[:, None] - torch.arange(tk)[None, :]).abs().to(weights)  # [Tq, Tk]
    return (weights * gap).sum(-1).mean(-1)


def self_sites(trace: Trace) -> list[str]:
    """The run's self-attention sites in computation order ("enc.0.self", …, "dec.0.self", …)."""
    return [names.site_of(n) or "" for n in trace.names() if n.endswith(".self.weights")]


def side_ids(trace: Trace, site: str) -> torch.Tensor:
    """[T]: the token ids the site's stack reads (an encoder's the source's, a decoder's the target's)."""
    side = "src" if site.startswith("enc.") else "tgt"
    return trace[names.side_entry(side, "ids")].reshape(-1)


def probe_ids(vocab_size: int, length: int, seed: int = 0, avoid: frozenset[int] = frozenset()) -> list[int]:
    """`length` random token ids (none of `avoid`: the special tokens) then the same ids again: the sequence an
    induction head completes. Seeded, so a map is the same each time."""
    generator = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([i for i in range(vocab_size) if i not in avoid])
    if len(allowed) == 0:
        raise ValueError("the vocabulary has no ordinary token to build a repeated sequence from")
    half = allowed[torch.randint(len(allowed), (length,), generator=generator)].tolist()
    return half + half


@dataclass(frozen=True)
class HeadStats:
    """The statistics of every self-attention head: `values[stat]` is [sites, H] float32, rows in `sites` order."""

    sites: list[str]
    values: dict[str, torch.Tensor] = field(default_factory=dict)
    probe_tokens: int = 0  # the length of the repeated sequence the induction scores were read on (0: none)


def head_stats(
    trace: Trace,
    probe: Trace | None = None,
    *,
    exclude_bos: bool = False,
    exclude_current_token: bool = False,
    measure: str = "mul",
) -> HeadStats:
    """Every self-attention head's statistics on `trace`; the induction score on `probe` (a run of `probe_ids`
    of the same model; NaN without one). The TransformerLens switches apply to both of its scores."""
    sites = self_sites(trace)
    score = partial(similarity, exclude_bos=exclude_bos, exclude_current_token=exclude_current_token, measure=measure)
    rows: dict[str, list[torch.Tensor]] = {stat: [] for stat in STATS}
    for site in sites:
        w = trace[names.site_entry(site, "weights")].float()  # [H, T, T]
        rows["entropy"].append(entropy(w))
        rows["sink"].append(sink_mass(w))
        rows["distance"].append(mean_distance(w))
        rows["previous"].append(score(w, previous_token_pattern(w.shape[-1])))
        pw = None if probe is None else probe[names.site_entry(site, "weights")].float()  # [H, T', T']
        if probe is None or pw is None or pw.shape[-1] < 2:  # no probe, or a decoder that read its start token only
            rows["induction"].append(torch.full((w.shape[0],), float("nan")))
        else:
            pattern = induction_pattern(side_ids(probe, site))
            rows["induction"].append(score(pw, pattern))
    values = {stat: torch.stack(r) if r else torch.zeros(0, trace.n_heads) for stat, r in rows.items()}
    n_probe = 0 if probe is None or not sites else int(side_ids(probe, sites[0]).numel())
    return HeadStats(sites, values, n_probe)


def run_exact(live: LiveModel, ids: list[int], options: RunOptions | None = None) -> Trace:
    """A recorded run of `live` on exactly `ids` (no special tokens added or taken away: what the sink what-if
    and the induction probe need), on the side its model reads first (an encoder's source, a decoder-only
    model's prompt; an encoder-decoder's decoder then reads its start token)."""
    config = live.config
    options = live.checked_options(options or RunOptions())
    side = "src" if config.has_encoder else "tgt"
    tok = live.tokenizer(side)
    ids = checked_ids(ids, tok.vocab_size, side)
    rec = Recorder(True)
    x = torch.tensor([ids])  # [1, T]
    rec.tokens(names.side_entry(side, "tokens"), [tok.id_to_token(i) for i in ids])
    rec(names.side_entry(side, "ids"), x)
    tgt = x if side == "tgt" else None
    if config.has_encoder and config.has_decoder:
        start = live.tokenizer("tgt").specials.wrap("decoder", [])[:1] or [ids[0]]
        tgt = torch.tensor([start])  # [1, 1]
        rec.tokens(names.side_entry("tgt", "tokens"), [live.tokenizer("tgt").id_to_token(start[0])])
        rec(names.side_entry("tgt", "ids"), tgt)
    device = next(live.module.parameters()).device
    with torch.inference_mode():
        live.module(
            x.to(device) if side == "src" else None, None if tgt is None else tgt.to(device), options=options, rec=rec
        )
    return finish(rec, config, options.resolved(config), str(device))
