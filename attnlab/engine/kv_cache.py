"""Generation with a KV cache: the prompt runs once (the prefill), then each new token runs only its own
position through the decoder, its queries attending to the cached K and V rows of every earlier position.

The cache holds each decoder self-attention site's K and V after the rotary turn, [B, H_kv, t, dk]: under
grouped-query attention one cached head serves H / H_kv query heads (layers.attend repeats it for them).
Cross-attention reads the encoder's output, which does not change while decoding: it is computed once, by
the prefill, and kept (`CachedRun.memory`).

A step computes BLOCK (4) rows, all the new token's, and keeps the first: a matrix product of one row goes to a
matrix-vector kernel that sums in another order than the whole-sequence run's matrix product does, while a
product of a few rows takes the same kernel, so the projections and feed-forward layers give the row the bits
the whole sequence's row gets. The attention's row sums over its t + 1 keys where the whole run's row t sums
over all T, the later ones blocked: a recorded attention pads its keys and sums them in fixed groups
(engine/row_stable.py), so those agree too, and every recorded row of a step equals the whole-sequence
trace's row bit for bit (tests/engine/test_kv_cache.py; `benchmarks/generation_bench.py --bitwise` lists
each entry's distance). A run that records nothing takes the fused kernel and agrees to float32 rounding.
The other rows cost little: a step reads every weight once either way.

Shapes: B batch (1), H heads, H_kv K/V heads, t cached positions, dk head width, d = d_model, V vocabulary.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.context import RunContext, final_norm
from attnlab.engine.embedding import embed_tokens
from attnlab.engine.layers import MultiHeadAttention
from attnlab.engine.masks import NEG_INF, AttentionMask, padded_keys
from attnlab.engine.model import Transformer
from attnlab.engine.options import ResolvedOptions
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import MEMORY, LayerInputs
from attnlab.engine.softcap import cap_logits
from attnlab.engine.trace import Trace

# CPU matrix products (MKL) of fewer than WHOLE_ROWS rows compute them in groups of ROWS, and the rows of a last,
# shorter group by another kernel that rounds differently; from WHOLE_ROWS rows on every row rounds alike
ROWS, WHOLE_ROWS = 4, 12
BLOCK = ROWS  # the rows a step computes (see the module's docstring); the first is the new token's


class SiteCache:
    """One decoder self-attention site's cached K and V, called by the attention as its `kv_step`: it appends
    the first `keep` rows of this step's K and V. A step attends to the whole cache; the prefill (`prefill`)
    to the rows it computed, as a whole-sequence run does. The rows live in buffers that double when full, so
    a step writes its row in place instead of copying the cache (`k` and `v` are views of the rows held)."""

    def __init__(self) -> None:
        self._k: Tensor | None = None  # [B, H_kv, capacity, dk]
        self._v: Tensor | None = None  # [B, H_kv, capacity, dk]
        self.n = 0  # the rows held
        self.keep = 1
        self.prefill = False

    def __call__(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """k, v [B, H_kv, rows, dk] -> the cache's [B, H_kv, t + keep, dk] (this step's rows last), or k, v
        themselves in the prefill."""
        n, keep = self.n, self.keep
        if self._k is None or self._v is None or n + keep > self._k.shape[2]:
            capacity = max(2 * (n + keep), 16)
            grown_k = k.new_empty(*k.shape[:2], capacity, k.shape[-1])  # [B, H_kv, capacity, dk]
            grown_v = v.new_empty(*v.shape[:2], capacity, v.shape[-1])
            if self._k is not None and self._v is not None:
                grown_k[:, :, :n], grown_v[:, :, :n] = self._k[:, :, :n], self._v[:, :, :n]
            self._k, self._v = grown_k, grown_v
        self._k[:, :, n : n + keep] = k[:, :, :keep]
        self._v[:, :, n : n + keep] = v[:, :, :keep]
        self.n = n + keep
        return (k, v) if self.prefill else (self._k[:, :, : self.n], self._v[:, :, : self.n])

    @property
    def k(self) -> Tensor | None:
        """The cached K [B, H_kv, t, dk] (a view), None before the prefill."""
        return None if self._k is None else self._k[:, :, : self.n]

    @property
    def v(self) -> Tensor | None:
        """The cached V [B, H_kv, t, dk] (a view), None before the prefill."""
        return None if self._v is None else self._v[:, :, : self.n]

    @property
    def length(self) -> int:
        return self.n


@dataclass
class CachedRun:
    """A decoder's state between generation steps: each self-attention site's cache, the encoder's output
    (encoder-decoder), the source's padding, and the run's resolved options."""

    options: ResolvedOptions
    sites: dict[str, SiteCache] = field(default_factory=dict)
    memory: Tensor | None = None  # [B, S, d], the encoder's output
    src_pad: Tensor | None = None  # [B, S]
    length: int = 0  # the positions cached

    def site(self, name: str) -> SiteCache:
        return self.sites.setdefault(name, SiteCache())


def bytes_per_token(config_layers: int, kv_heads: int, head_dim: int, element: int) -> int:
    """What the cache grows by per token: K and V, in every layer, for every K/V head: 2·L·H_kv·dk·bytes."""
    return 2 * config_layers * kv_heads * head_dim * element


@contextmanager
def cached_attention(model: Transformer, run: CachedRun, keep: int, prefill: bool = False) -> Iterator[None]:
    """Hook each decoder self-attention onto its site's cache for one forward (`keep` rows of it kept)."""
    hooked: list[MultiHeadAttention] = []
    for i, layer in enumerate(model.decoder):
        cache = run.site(names.site(names.layer("dec", i), "self"))
        cache.keep, cache.prefill = keep, prefill
        attention = layer.self_attn
        assert isinstance(attention, MultiHeadAttention)
        attention.kv_step = cache
        hooked.append(attention)
    try:
        yield
    finally:
        for attention in hooked:
            attention.kv_step = None


def prefill_rows(n: int, max_len: int) -> int:
    """The rows the prefill computes for an n-token prompt: a multiple of ROWS when n is below WHOLE_ROWS (the
    extra rows repeat the last token, after it: the causal mask keeps them from the prompt's rows), else n."""
    padded = -(-n // ROWS) * ROWS
    return padded if n < WHOLE_ROWS and padded <= max_len else n


def prefill(model: Transformer, run: CachedRun, ids: Tensor, rec: Recorder, src: Tensor | None) -> Tensor:
    """The prompt ids [1, T0] (and the source ids [1, S], encoder-decoder) through the whole model, each
    self-attention's K and V of the prompt kept in `run`'s cache. Records the rows computed (prefill_rows).
    -> logits [1, rows, V] (the first T0 rows are the prompt's)"""
    n = ids.shape[1]
    rows = prefill_rows(n, model.config.max_len)
    if rows > n:
        ids = torch.cat([ids, ids[:, -1:].expand(1, rows - n)], dim=1)  # [1, rows]
    inputs = LayerInputs()  # keeps the encoder's output (and each layer's input)
    with cached_attention(model, run, n, prefill=True):
        logits = model(src, ids, options=run.options, rec=rec, inputs=inputs)  # [1, rows, V]
    if src is not None and model.config.has_encoder:  # the encoder's output, read again by every step
        run.memory = inputs.get(MEMORY)  # [1, S, d]
    run.length = n
    return logits


def step(model: Transformer, run: CachedRun, token: int, rec: Recorder) -> Tensor:
    """One new token (at position t = run.length) through the decoder, attending to the cache, which grows
    by its K and V rows. Records into `rec` the BLOCK rows computed (a run that records nothing computes one
    row: only a recorded row is promised the whole run's bits). -> logits [1, BLOCK or 1, V] (row 0 is the
    new token's)"""
    cfg, t = model.config, run.length
    device = model.sinusoid.device
    n = BLOCK if rec.enabled else 1
    ids = torch.full((1, n), token, dtype=torch.long, device=device)  # [1, n]
    ctx = RunContext(cfg, run.options, rec, 0.0, device, model.sinusoid.dtype, t + n)
    ctx.rotary = _from(ctx.rotary, t)
    ctx.local_rotary = _from(ctx.local_rotary, t)
    tables = model.side_tables("tgt")
    if tables.positions is not None:  # the table read from position t (embed_tokens starts at its offset)
        tables = replace(tables, positions=tables.positions[t:])
    y = embed_tokens(tables, cfg, ids, "tgt", rec, None, run.options.positional)  # [1, n, d]
    src_keys = padded_keys(run.src_pad, run.options) if run.memory is not None else None
    with cached_attention(model, run, 1):
        for i, layer in enumerate(model.decoder):
            layer_name = names.layer("dec", i)
            site = names.site(layer_name, "self")
            self_mask = step_mask(t, ctx.masks.window_of(site), y)
            cross_mask = None
            if run.memory is not None:
                cross_mask = ctx.masks(names.site(layer_name, "cross"), n, run.memory.shape[1], src_keys)
            y = layer(y, run.memory, self_mask, cross_mask, ctx, layer_name)  # [1, n, d]
    y = final_norm(model.dec_norm, y, ctx, "dec")
    rec(names.stack_out("dec"), y)
    logits = cap_logits(model.project(y, rec), cfg.final_softcap, rec)  # [1, n, V]
    rec(names.LOGITS, logits)
    run.length = t + 1
    return logits


def _from(tables: tuple[Tensor, Tensor] | None, t: int) -> tuple[Tensor, Tensor] | None:
    """Rotary (cos, sin) tables [P, r/2] from position t on (a step's rows all sit at position t)."""
    return None if tables is None else (tables[0][t:], tables[1][t:])


def step_mask(t: int, window: int, like: Tensor) -> AttentionMask:
    """The mask of the step's queries (like [1, n, d]) at position t over keys 0 … t: nothing blocked but,
    with a sliding window W, the keys j with t - j >= W.  -> additive [1, 1, n, t + 1]"""
    additive = torch.zeros(1, 1, like.shape[1], t + 1, dtype=like.dtype, device=like.device)  # [1, 1, n, t + 1]
    if 0 < window <= t:
        additive[..., : t - window + 1] = NEG_INF
    return AttentionMask(additive, blocks_nothing=not (0 < window <= t), blocked_rows=False)


KEY_AXIS_STEPS = frozenset({"scores", "scaled", "mask", "masked", "weights", "capped", "biased", "bias"})


def step_rows(trace: Trace, rows: int, computed: int, cache: bool) -> OrderedDict[str, Any]:
    """A step's entries, read (derived ones computed on all the rows the step computed), with each
    query-position axis (-2, of size `computed`) cut to its first `rows` rows. `cache`: a self-attention's
    K and V are the whole cache (a step's: rows 0 … t, kept whole); else (the prefill) they and the key axis
    of an attention map are cut to `rows` too."""
    out: OrderedDict[str, Any] = OrderedDict()
    every = trace.names()
    for name, value in zip(every, trace.fetch(every), strict=True):  # one batch: reading one by one is O(n²)
        step_name = names.step_of(name)
        if not isinstance(value, Tensor) or value.dim() < 2 or (cache and step_name in ("k", "v")):
            out[name] = value
            continue
        if value.shape[-2] == computed:
            value = value[..., :rows, :]
        if not cache and step_name in KEY_AXIS_STEPS and value.shape[-1] == computed:
            value = value[..., :rows]
        out[name] = value.clone()
    return out
