"""The explanation of the KV-cache stage (kind "kv_cache", present/kinds.py): what generation keeps of a decoder
self-attention between steps, what a grouped-query model shares, and what the cache costs. Its view is
views/kv_cache.py. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words
from attnlab.present.explain_page import DK, page, shape_of
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

FORMULA = (
    "K<sub>0…t</sub> = [K<sub>0…t−1</sub> (cached) ; x<sub>t</sub> W<sub>K</sub>], &nbsp; "
    "V<sub>0…t</sub> = [V<sub>0…t−1</sub> (cached) ; x<sub>t</sub> W<sub>V</sub>], &nbsp; "
    f"weights<sub>t</sub> = softmax(q<sub>t</sub> K<sub>0…t</sub><sup>T</sup> / √{DK}), &nbsp; "
    "bytes per token = 2 · layers · K/V heads · d<sub>k</sub> · bytes per number"
)


def kv_cache_page(stage: Stage, trace: Trace) -> str:
    """The KV-cache stage: the rows a generation step reuses and the one it adds, the shared K/V heads, the cost."""
    site, cfg = stage.site or "", trace.config
    k = shape_of(trace, names.site_entry(site, "k"))
    heads, kv_heads = trace.n_heads, cfg.kv_heads
    grouped = (
        f"This model has {heads} query heads but only {kv_heads} K/V heads (grouped-query attention): each "
        f"cached head is read by {heads // max(kv_heads, 1)} query heads, so the cache is "
        f"{heads // max(kv_heads, 1)} times smaller than with one K/V head per query head."
        if kv_heads < heads
        else "Every query head has its own K/V head, so the cache keeps one K and one V row per head per token."
    )
    sentences = [
        "When a decoder generates, the rows of earlier positions never change: position j only looks at "
        "positions 0 … j. So each step runs only the new token through the layers, computes its query, key and "
        "value, appends the key and value to the cache, and lets its query attend to every cached key.",
        "The rows marked cached were computed by earlier steps and are read again; the new row is this step's. "
        "Move the timeline slider to pick a step.",
        grouped,
        "The step's row equals row t of the whole sequence run at once, bit for bit: attnlab sums the attention "
        "over keys in fixed groups, so a row's numbers do not depend on how many keys follow it.",
    ]
    shapes = f"K and V of this site [{' × '.join(map(str, k))}] (K/V heads × tokens × d<sub>k</sub>)." if k else ""
    return page(f"KV cache · {words.site_full_words(site)}", FORMULA, sentences, shapes)
