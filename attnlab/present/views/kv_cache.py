"""The KV-cache view-model of one generation step (engine/generation.py): which K and V rows the step read
from the cache and which it added, how a grouped-query model shares one cached head among several query
heads, and what the cache costs per token and in all. Qt-free; a panel draws it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.engine import kv_cache
from attnlab.engine.trace import Trace
from attnlab.present.views.model import MessageView

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@dataclass(frozen=True)
class KVCacheView:
    """One step's cache. `rows` [cache length]: 0 for a row read from the cache, 1 for a row this step added.
    `groups[j]`: the query heads that read cached K/V head j."""

    title: str
    first_new: int  # the position of the first row this step computed (t; 0 at the prefill)
    reused: int  # rows read from the cache
    new: int  # rows this step added (1 after the prefill; the prompt's length at the prefill)
    rows: np.ndarray  # [reused + new] float32
    groups: list[list[int]]
    layers: int
    bytes_per_token: int
    cache_bytes: int
    notes: list[str]


def kv_cache_view(trace: Trace) -> KVCacheView | MessageView:
    """The cache of the step `trace` is (LiveModel.generate's traces carry info['rows'])."""
    if "rows" not in trace.info:
        return MessageView("kv_cache", "This run is not a generation step: it recomputed every position at once.")
    first, end = trace.info["rows"]
    reused = first if "cache_length" in trace.info else 0  # the prefill reads no cache
    new = end - first
    cfg, heads, kv_heads = trace.config, trace.n_heads, trace.n_kv_heads
    per_head = heads // kv_heads
    groups = [list(range(j * per_head, (j + 1) * per_head)) for j in range(kv_heads)]
    element = DTYPE_BYTES.get(trace.options.dtype, 4)
    d_head = cfg.attn_width // cfg.n_heads
    per_token = kv_cache.bytes_per_token(cfg.n_decoder_layers, kv_heads, d_head, element)
    rows = np.zeros(reused + new, dtype=np.float32)
    rows[reused:] = 1.0
    notes = [
        f"{reused} K and V rows reused from the cache, {new} computed at this step"
        + (" (the prompt, run at once)" if not reused else ""),
        f"{heads} query heads read {kv_heads} cached K/V heads"
        + (f": each cached head serves {per_head} query heads" if per_head > 1 else ": one each"),
        f"the cache grows by 2 × {cfg.n_decoder_layers} layers × {kv_heads} K/V heads × {d_head} × {element} bytes"
        f" = {per_token:,} bytes per token; {per_token * (reused + new):,} bytes now",
    ]
    step = trace.info.get("step", 0)
    return KVCacheView(
        title=f"KV cache at step {step}: position {end - 1}",
        first_new=first,
        reused=reused,
        new=new,
        rows=rows,
        groups=groups,
        layers=cfg.n_decoder_layers,
        bytes_per_token=per_token,
        cache_bytes=per_token * (reused + new),
        notes=notes,
    )
