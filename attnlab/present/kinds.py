"""One registration per stage kind: `KINDS` maps every `Stage.kind` present/stages.py can produce to its view
builder (the Qt-free view-model its panel draws) and its explanation page. ui/stages keys its panel table
(`PANELS`) by the same kinds, and tests/present/test_stage_kinds.py fails when a kind lacks one of the three.

A view builder is `(trace, stage, display, vocab) -> view-model | MessageView`; one with `defers` also takes
`defer=True` from a panel, which leaves a long map's unread heads for the widget to read off the GUI thread. An
explanation is `(stage, trace) -> HTML`; the page of each kind is written in the explain_<kind> module beside
its view (present/views/<kind>.py). Qt-free."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.present.explain_attention import (
    bias_page,
    mask_page,
    mixing_page,
    scale_why_page,
    scaled_page,
    score_step,
    scores_page,
    site_step,
    weights_page,
)
from attnlab.present.explain_factorised import factorised_page
from attnlab.present.explain_inputs import inputs_explanation
from attnlab.present.explain_kv_cache import kv_cache_page
from attnlab.present.explain_layers import (
    addnorm_explanation,
    ffn_explanation,
    norm_compare_page,
    post_norm_explanation,
)
from attnlab.present.explain_lens import lens_page
from attnlab.present.explain_moe import moe_page
from attnlab.present.explain_output import output_explanation
from attnlab.present.explain_qk_norm import qk_norm_page
from attnlab.present.explain_qkv import qkv_explanation
from attnlab.present.explain_softcap import softcap_page
from attnlab.present.stage_types import KV_CACHE, MOE, NORM_COMPARE, POST_NORM, Stage, ViewState
from attnlab.present.views.addnorm import addnorm_view
from attnlab.present.views.attention import map_view, mask_view, qkv_view
from attnlab.present.views.disentangled import term_view
from attnlab.present.views.factorised import factorised_view
from attnlab.present.views.ffn import ffn_view
from attnlab.present.views.heads import heads_view
from attnlab.present.views.inputs import embed_view, input_sum_view, tokens_view
from attnlab.present.views.kv_cache import kv_cache_view
from attnlab.present.views.lens import lens_view
from attnlab.present.views.lines import lines_view
from attnlab.present.views.moe import moe_view
from attnlab.present.views.norm_compare import norm_compare_view
from attnlab.present.views.output import output_view
from attnlab.present.views.position_bias import bias_view
from attnlab.present.views.positional import positional_view
from attnlab.present.views.qk_norm import qk_norm_view
from attnlab.present.views.scaling import scale_why_view
from attnlab.present.views.site_vectors import site_vector_view

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

ViewBuilder = Callable[..., Any]  # (trace, stage, display, vocab[, defer=]) -> a view-model or a MessageView
Explainer = Callable[[Stage, "Trace"], str]  # (stage, trace) -> the explanation page (HTML)


@dataclass(frozen=True)
class StageKind:
    view: ViewBuilder
    explain: Explainer
    defers: bool = False  # the builder takes `defer`: a long map is read by the widget, off the GUI thread
    family_only: bool = False  # only some imported families' runs have it (the classroom models never show it)


def _site_map(explain: Explainer, family_only: bool = False) -> StageKind:
    """A one-head map of an attention site (scores, ÷ √dₖ, masked, weights, …), read by its panel off the GUI
    thread when it is long."""
    return StageKind(map_view, explain, defers=True, family_only=family_only)


KINDS: dict[str, StageKind] = {
    # the inputs
    "tokens": StageKind(tokens_view, inputs_explanation),
    "embed": StageKind(embed_view, inputs_explanation),
    "pos": StageKind(positional_view, inputs_explanation),
    "input": StageKind(input_sum_view, inputs_explanation),
    names.EMBED_PROJ: StageKind(factorised_view, factorised_page, family_only=True),  # ALBERT, ELECTRA
    # one attention site, in computation order
    "qk_norm": StageKind(qk_norm_view, qk_norm_page, family_only=True),  # OLMo-2, Qwen3, Gemma 3
    "qkv": StageKind(qkv_view, qkv_explanation),
    KV_CACHE: StageKind(kv_cache_view, kv_cache_page),  # a decoder self-attention's cache at a generation step
    **{term: StageKind(term_view, score_step(mixing_page)) for term in names.DISENTANGLED_TERMS},  # DeBERTa
    **{term: StageKind(term_view, score_step(mixing_page), family_only=True) for term in names.RELATIVE_KEY_TERMS},
    "scores": _site_map(score_step(scores_page)),
    "scaled": _site_map(score_step(scaled_page)),
    "scale_why": StageKind(scale_why_view, site_step(scale_why_page)),
    "bias": StageKind(bias_view, site_step(bias_page)),  # ALiBi, T5's relative bias
    "biased": _site_map(site_step(bias_page)),
    "capped": _site_map(softcap_page, family_only=True),  # Gemma 2's soft-capping
    "mask": StageKind(mask_view, site_step(mask_page)),
    "masked": _site_map(site_step(mask_page)),
    "weights": _site_map(site_step(weights_page)),
    "heads": StageKind(heads_view, site_step(weights_page), defers=True),
    "lines": StageKind(lines_view, site_step(weights_page)),
    "context": StageKind(site_vector_view, site_step(mixing_page)),
    "concat": StageKind(site_vector_view, site_step(mixing_page)),
    "attn_out": StageKind(site_vector_view, site_step(mixing_page)),
    # the rest of a layer
    "addnorm": StageKind(addnorm_view, addnorm_explanation),
    POST_NORM: StageKind(addnorm_view, post_norm_explanation, family_only=True),  # Gemma 2's sandwich
    NORM_COMPARE: StageKind(norm_compare_view, norm_compare_page),
    "ffn": StageKind(ffn_view, ffn_explanation),
    MOE: StageKind(moe_view, moe_page),
    # the output
    names.LOGITS: StageKind(output_view, output_explanation),
    names.PROBS: StageKind(output_view, output_explanation),
    names.LENS: StageKind(lens_view, lens_page),
}
FAMILY_ONLY_KINDS = frozenset(kind for kind, spec in KINDS.items() if spec.family_only)


def kind_of(stage: Stage) -> StageKind:
    """The registration of `stage.kind`; ValueError names an unknown kind."""
    spec = KINDS.get(stage.kind)
    if spec is None:
        raise ValueError(f"no view-model for stage kind {stage.kind!r} yet; known: {', '.join(sorted(KINDS))}")
    return spec


def view_for(
    trace: Trace,
    stage: Stage,
    display: ViewState,
    vocab: Callable[[int], str] | None = None,
    *,
    defer: bool = False,
) -> Any:
    """The view-model of `stage` (a MessageView when the run cannot show it); ValueError for a kind without one.
    `defer`: a panel's call; a long map's unread heads are left for the widget (kinds with `defers`)."""
    spec = kind_of(stage)
    if defer and spec.defers:
        return spec.view(trace, stage, display, vocab, defer=True)
    return spec.view(trace, stage, display, vocab)


def explanation_of(stage: Stage, trace: Trace) -> str:
    """The page of `stage`'s kind (HTML); ValueError for an unknown kind."""
    return kind_of(stage).explain(stage, trace)
