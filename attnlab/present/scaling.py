"""Why divide by √dₖ, measured (Qt-free): the numbers behind the "why ÷ √dₖ?" stage.

Two parts:
- `site_scaling(trace, site)`: for one attention site of a live run, the spread of its raw scores q·k and of
  the scaled scores q·k / √dₖ (shared-bin histograms over the cells the mask allows) and, per head, the
  softmax entropy and the largest weight with and without the division. Both variants are computed here from
  the recorded raw scores and mask, whatever the run's own "scale" toggle says (the temperature is not
  applied: this is about the division alone).
- `random_scaling(d_k, seed)` / `scaling_sweep(seed)`: q and k drawn at random with unit-variance entries;
  the sample std of q·k grows as √dₖ, and without the division the softmax saturates (its largest weight
  tends to 1) while with it the spread stays about 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names, overview
from attnlab.present.disentangled import scale_factor
from attnlab.present.facts import array

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

HISTOGRAM_BINS = 30
SAMPLE_CELLS = 1 << 22  # a site's maps larger than this are read from their last query rows (_last_rows)
SWEEP_DKS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
DRAW_QUERIES = 128  # random queries per draw
DRAW_KEYS = 32  # random keys per draw (the softmax runs over these)
MAX_DK = 1024


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """softmax over the last axis; −inf entries get weight 0; a row with every entry −inf stays all NaN."""
    top = np.max(scores, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - top)
        return e / e.sum(axis=-1, keepdims=True)


def entropy_rows(p: np.ndarray) -> np.ndarray:
    """−Σ p log p over the last axis (nats), with 0 · log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=-1)


@dataclass(frozen=True)
class SiteScaling:
    d_k: int
    raw: np.ndarray  # float [N] allowed raw scores q·k of every head
    scaled: np.ndarray  # float [N] the same cells ÷ √dₖ
    edges: np.ndarray  # [B + 1] shared histogram bin edges
    raw_counts: np.ndarray  # [B]
    scaled_counts: np.ndarray  # [B]
    entropy_raw: np.ndarray  # [H] mean over query rows of the softmax entropy without ÷√dₖ (nats)
    entropy_scaled: np.ndarray  # [H] the same with ÷√dₖ
    max_raw: np.ndarray  # [H] mean over query rows of the largest softmax weight without ÷√dₖ
    max_scaled: np.ndarray  # [H] the same with ÷√dₖ
    entropy_uniform: float  # mean over rows of log(#allowed keys): the entropy of an even spread
    rows: tuple[int, int] | None = None  # a long map: the query rows [first, last) the figures come from

    @property
    def std_raw(self) -> float:
        return float(self.raw.std())

    @property
    def std_scaled(self) -> float:
        return float(self.scaled.std())


def _mask_for(trace: Trace, site: str, shape: tuple[int, ...]) -> np.ndarray:
    """The additive mask [Tq, Tk] (zeros when the site recorded none)."""
    name = names.site_entry(site, "mask")
    if name in trace:
        return np.broadcast_to(array(trace, name), shape[-2:]).astype(np.float64)
    return np.zeros(shape[-2:])


def _row_stats(scores: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per head: mean entropy and mean largest weight of softmax(scores + mask) over the rows that can attend."""
    p = softmax_rows(scores + mask)  # [H, Tq, Tk]
    live = np.isfinite(mask).any(axis=-1)  # [Tq]: a row with at least one allowed key
    entropy = entropy_rows(p)[:, live]  # [H, rows]
    top = p.max(axis=-1)[:, live]  # [H, rows]
    return entropy.mean(axis=-1), top.mean(axis=-1)


def _last_rows(trace: Trace, site: str) -> tuple[np.ndarray, np.ndarray, tuple[int, int] | None]:
    """(scores [H, r, Tk] float64, mask [r, Tk] float64, the rows taken or None for all): a map of more than
    SAMPLE_CELLS cells is read as its last query rows only (they see the most keys under a causal mask), one
    head at a time (engine/overview.py): all of an 8,192-token site would be 4 GiB of float64 here."""
    name = names.site_entry(site, "scores")
    H, Tq, Tk = overview.map_shape(trace, name)
    if H * Tq * Tk <= SAMPLE_CELLS:
        scores = array(trace, name).astype(np.float64)  # [H, Tq, Tk]
        return scores, _mask_for(trace, site, scores.shape), None
    rows = (max(0, Tq - max(1, SAMPLE_CELLS // (H * Tk))), Tq)
    heads = [overview.window(trace, name, h, rows, (0, Tk)).numpy() for h in range(H)]
    scores = np.stack(heads).astype(np.float64)  # [H, r, Tk]
    mask_name = names.site_entry(site, "mask")
    if mask_name in trace:
        mask = overview.window(trace, mask_name, None, rows, (0, Tk)).numpy().astype(np.float64)  # [r, Tk]
    else:
        mask = np.zeros(scores.shape[-2:])
    return scores, mask, rows


def site_scaling(trace: Trace, site: str, bins: int = HISTOGRAM_BINS) -> SiteScaling:
    """The spread of the scores and the softmax entropy per head of `site`, with and without ÷√dₖ."""
    scores, mask, rows = _last_rows(trace, site)  # [H, Tq, Tk] (or its last rows), [Tq, Tk]
    q_name = names.site_entry(site, "q")
    if q_name in trace:
        d_k = int(trace.device_value(q_name).shape[-1])
    else:
        d_k = trace.config.attn_width // trace.n_heads  # H·d_k: d_model unless head_dim is set
    scaled = scores / math.sqrt(d_k * scale_factor(trace.config))  # [H, Tq, Tk]; DeBERTa: √(factor · dₖ)
    allowed = np.broadcast_to(np.isfinite(mask), scores.shape)  # [H, Tq, Tk]
    raw_cells, scaled_cells = scores[allowed], scaled[allowed]  # [N] each
    lo = float(min(raw_cells.min(), scaled_cells.min())) if raw_cells.size else -1.0
    hi = float(max(raw_cells.max(), scaled_cells.max())) if raw_cells.size else 1.0
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    entropy_raw, max_raw = _row_stats(scores, mask)
    entropy_scaled, max_scaled = _row_stats(scaled, mask)
    n_allowed = np.isfinite(mask).sum(axis=-1)  # [Tq]
    uniform = float(np.log(n_allowed[n_allowed > 0]).mean()) if (n_allowed > 0).any() else 0.0
    return SiteScaling(
        d_k,
        raw_cells,
        scaled_cells,
        edges,
        np.histogram(raw_cells, edges)[0],
        np.histogram(scaled_cells, edges)[0],
        entropy_raw,
        entropy_scaled,
        max_raw,
        max_scaled,
        uniform,
        rows,
    )


@dataclass(frozen=True)
class RandomDraw:
    d_k: int
    seed: int
    scores: np.ndarray  # [DRAW_QUERIES, DRAW_KEYS] raw q·k of random unit-variance q, k
    std_raw: float  # sample std of the raw scores (≈ √dₖ)
    std_scaled: float  # sample std of the scores ÷ √dₖ (≈ 1)
    max_raw: float  # mean over queries of the largest softmax weight without ÷√dₖ
    max_scaled: float  # the same with ÷√dₖ


def random_qk(
    d_k: int, seed: int, n_queries: int = DRAW_QUERIES, n_keys: int = DRAW_KEYS
) -> tuple[np.ndarray, np.ndarray]:
    """q [n_queries, d_k] and k [n_keys, d_k] with independent N(0, 1) entries, reproducible from `seed`."""
    if not 1 <= int(d_k) <= MAX_DK:
        raise ValueError(f"d_k must be between 1 and {MAX_DK}, got {d_k}")
    rng = np.random.default_rng(int(seed))
    q = rng.standard_normal((n_queries, int(d_k)))  # [n_queries, d_k]
    k = rng.standard_normal((n_keys, int(d_k)))  # [n_keys, d_k]
    return q, k


def random_scaling(d_k: int, seed: int = 0, n_queries: int = DRAW_QUERIES, n_keys: int = DRAW_KEYS) -> RandomDraw:
    """Draw random q, k of size `d_k` and measure the spread of q·k and the softmax with/without ÷√dₖ."""
    q, k = random_qk(d_k, seed, n_queries, n_keys)
    scores = q @ k.T  # [n_queries, n_keys]
    scaled = scores / math.sqrt(d_k)  # [n_queries, n_keys]
    return RandomDraw(
        int(d_k),
        int(seed),
        scores,
        float(scores.std()),
        float(scaled.std()),
        float(softmax_rows(scores).max(axis=-1).mean()),
        float(softmax_rows(scaled).max(axis=-1).mean()),
    )


def scaling_sweep(seed: int = 0, d_ks: tuple[int, ...] = SWEEP_DKS) -> dict[str, np.ndarray]:
    """`random_scaling` for every d_k of `d_ks`: arrays 'd_k', 'std_raw', 'std_scaled', 'max_raw', 'max_scaled'."""
    draws = [random_scaling(d, seed) for d in d_ks]
    return {
        "d_k": np.array(d_ks, dtype=float),
        **{f: np.array([getattr(d, f) for d in draws]) for f in ("std_raw", "std_scaled", "max_raw", "max_scaled")},
    }
