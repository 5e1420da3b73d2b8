"""The KV-cache stage's view-model (kind "kv_cache", present/kinds.py): at generation step t of a decoder
self-attention site, which K and V rows the step reads from the cache (positions 0 … t − 1, computed by earlier
steps) and which it adds (position t), the cached K and V of the K/V head the chosen query head reads, how a
grouped-query model shares one cached head among several query heads, and what the cache costs per token.

Step t is the timeline's position (ViewState.upto; -1: the last position). A whole-sequence trace holds every
row a cached generation computes, bit for bit (engine/row_stable.py), so its rows 0 … t are the cache as step
t read it; a generation step's own Trace (LiveModel.generate: info['rows']) is read the same way. Qt-free;
ui/stages/kv_cache.py draws it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnlab.engine import kv_cache, names
from attnlab.engine.trace import Trace
from attnlab.present.explain_page import tokens_of
from attnlab.present.stage_types import Stage, ViewState
from attnlab.present.texts import counted
from attnlab.present.views.model import MatrixView, MessageView, matrix_view

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@dataclass(frozen=True)
class KVCacheView:
    """One step's cache at one site. `k`, `v`: the cached K and V [t + 1, dk] of the K/V head that the chosen
    query head reads, the last row the step's new one. `groups[j]`: the query heads that read cached head j."""

    title: str
    position: int  # t: the step's position; rows 0 … t - 1 are reused
    reused: int  # rows read from the cache
    new: int  # rows this step added (1; the prompt's length at a generation's prefill)
    k: MatrixView
    v: MatrixView
    head: int
    kv_head: int
    groups: list[list[int]]
    bytes_per_token: int
    cache_bytes: int
    notes: list[str]


def step_rows(trace: Trace, upto: int, length: int) -> tuple[int, int, int]:
    """(t, reused, new) of the step at timeline position `upto` (-1 or past the end: the last) of a trace of
    `length` key positions; a generation step's own Trace says its rows (info['rows'])."""
    if "rows" in trace.info:  # LiveModel.generate's step: its rows, after `cache_length` - 1 cached ones
        first, end = trace.info["rows"]
        return end - 1, first if "cache_length" in trace.info else 0, end - first
    t = upto if 0 <= upto < length else length - 1
    return t, t, 1


def kv_cache_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> KVCacheView | MessageView:
    """The cache of a decoder self-attention site at the timeline's step (see the module)."""
    site = stage.site or ""
    n = names.site_entries(site)
    if n.k not in trace or n.v not in trace:
        return MessageView("kv_cache", "This run did not record K and V: record the run to see its KV cache.")
    k_all, v_all = trace[n.k], trace[n.v]  # [H_kv, T, dk] each
    kv_heads, length, d_head = k_all.shape
    heads = trace.n_heads
    per_head = max(1, heads // kv_heads)
    head = min(display.head, heads - 1)
    kv_head = head // per_head
    t, reused, new = step_rows(trace, display.upto, length)
    cfg = trace.config
    element = DTYPE_BYTES.get(trace.options.dtype, 4)
    per_token = kv_cache.bytes_per_token(cfg.n_decoder_layers, kv_heads, d_head, element)
    tokens = tokens_of(trace, "tgt")[: t + 1]
    rows = [f"{tok}  ← new" if i >= t + 1 - new else tok for i, tok in enumerate(tokens)]  # the rest: cached
    cols = [str(c) for c in range(d_head)]
    k = matrix_view(n.k, k_all[kv_head, : t + 1].float().numpy(), rows, f"K cache · K/V head {kv_head}", cols=cols)
    v = matrix_view(n.v, v_all[kv_head, : t + 1].float().numpy(), rows, f"V cache · K/V head {kv_head}", cols=cols)
    groups = [list(range(j * per_head, (j + 1) * per_head)) for j in range(kv_heads)]
    shared = (
        f"{heads} query heads read {kv_heads} cached K/V heads: each cached head serves {per_head} query heads "
        f"(head {head} reads K/V head {kv_head}, with heads {', '.join(map(str, groups[kv_head]))})"
        if per_head > 1
        else f"{heads} query heads, {kv_heads} cached K/V heads: one each"
    )
    notes = [
        f"At position {t}: {counted(reused, 'K and V row')} reused from the cache, {new} computed at this step"
        + (" (the prompt, run at once)" if new > 1 else ""),
        shared,
        f"The cache grows by 2 (K and V) × {cfg.n_decoder_layers} layers × {kv_heads} K/V heads × {d_head} × "
        f"{element} bytes = {per_token:,} bytes per token; {per_token * (t + 1):,} bytes at {t + 1} tokens",
    ]
    return KVCacheView(
        title=f"KV cache · {site} · step at position {t}",
        position=t,
        reused=reused,
        new=new,
        k=k,
        v=v,
        head=head,
        kv_head=kv_head,
        groups=groups,
        bytes_per_token=per_token,
        cache_bytes=per_token * (t + 1),
        notes=notes,
    )
