"""Short explanations of each stage: what it computes, its formula, and the live shapes of this run.

`explanation_html(stage, trace)` returns a small HTML fragment (a QLabel / QTextBrowser renders it). Every
number in it is read from the trace, so flipping a toggle (heads, scaling, masks, norm placement, positional
encoding, residuals) changes the text along with the pictures; how the run was made is read from the
RunOptions it carries (see `attnlab.present.facts`). Qt-free.

The page of each stage kind is registered once, beside its view builder, in present/kinds.py; the pages are
written by kind in the explain_<kind> modules (explain_inputs, explain_attention, explain_layers, explain_output,
explain_lens, explain_moe, and the mechanisms': explain_qk_norm, explain_softcap, explain_factorised,
disentangled, relative_key, position_bias), with explain_page's one layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.present.explain_layers import shared_layers_note
from attnlab.present.kinds import explanation_of
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def explanation_html(stage: Stage, trace: Trace) -> str:
    """A short explanation of `stage` with its formula and the live shapes from `trace` (HTML); a model whose
    layers share one set of weights (ALBERT) says so under every layer stage's page."""
    return explanation_of(stage, trace) + shared_layers_note(stage, trace)
