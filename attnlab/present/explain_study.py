"""Explanation paragraphs for the study toggles of an attention site: projections off (plain dot-product
attention) and ablated heads. explain.py appends them to every attention step's page."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import words

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def study_notes(site: str, trace: Trace) -> str:
    """HTML paragraphs ('' when neither toggle touches this site)."""
    options = trace.options
    parts = []
    if not options.projections:
        cross = names.site_kind(site) == "dec.cross"
        kv = "the encoder output" if cross else "x"
        parts.append(
            "<p><b>Projections are off in this run</b>: plain dot-product attention, the first example of the "
            f"teaching texts. Q = x{' (the decoder tokens)' if cross else ''}, K = V = {kv}, each cut into the "
            "heads' slices, so the scores are x·xᵀ per slice (÷√dₖ when scaling is on); "
            "W_Q, W_K, W_V and their biases are skipped, and so is W_O: the heads' concat is the sub-layer's "
            "output. Without learned projections a token matches itself best.</p>"
        )
    ablated = options.ablations(site)
    if ablated:
        what = ", ".join(
            f"{words.head_words(h)} {'zeroed' if m == 'zero' else 'replaced by its mean over positions'}"
            for h, m in sorted(ablated.items())
        )
        parts.append(
            f"<p><b>Ablated here</b>: {html.escape(what)}. The weights and scores are still "
            "computed; the context that head hands to W_O is replaced, and everything after it "
            "(the concat, W_O, later layers, the output) sees the replacement. The output stage shows "
            "the next-token probabilities before → after.</p>"
        )
    return "\n".join(parts)
