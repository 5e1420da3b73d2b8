"""The "why ÷ √dₖ?" stage as plain data: this site's score spread and softmax entropy per head with and without
the division (present/scaling.py computes them), their titles and sentences."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present import words
from attnlab.present.disentangled import scale_why_words
from attnlab.present.facts import missing, missing_message, site_name
from attnlab.present.scaling import RandomDraw, SiteScaling, site_scaling
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView


@dataclass(frozen=True)
class ScaleWhyView:
    heading: str
    stats: SiteScaling
    head_ticks: list[tuple[int, str]]  # the entropy bars' x ticks: (0, "head 1"), …
    note: str

    kind = "scale_why"


def scale_why_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> ScaleWhyView | MessageView:
    site = stage.site or ""
    name = names.site_entry(site, "scores")
    if missing(trace, [name]):
        return MessageView("scale_why", missing_message("The raw scores of this site", [name]))
    stats = site_scaling(trace, site)
    return ScaleWhyView(
        f"Why ÷ √dₖ? · {site_name(site)} · dₖ = {stats.d_k}, √dₖ ≈ {stats.d_k**0.5:.2f}"
        + scale_why_words(trace.config, stats.d_k),  # DeBERTa divides by √(factor · dₖ)
        stats,
        [(i, words.head_words(i)) for i in range(len(stats.entropy_raw))],
        f"std of the scores: {stats.std_raw:.2f} raw, {stats.std_scaled:.2f} after ÷√dₖ. Mean entropy "
        f"{stats.entropy_raw.mean():.2f} → {stats.entropy_scaled.mean():.2f} nats (an even spread over the "
        f"allowed keys: {stats.entropy_uniform:.2f}, dashed)."
        + (f" A long input: from the last query rows, {stats.rows[0]:,}–{stats.rows[1] - 1:,}." if stats.rows else ""),
    )


def random_draw_note(draw: RandomDraw) -> str:
    """The sentence under the random q·k experiment of a chosen d_k."""
    d_k = draw.d_k
    return (
        f"d_k = {d_k}: std of q·k = {draw.std_raw:.2f} (√d_k = {d_k**0.5:.2f}), after ÷√d_k "
        f"{draw.std_scaled:.2f}. Largest softmax weight: {draw.max_raw:.2f} without the division, "
        f"{draw.max_scaled:.2f} with it. Dashed: √d_k."
    )
