"""View-models: for a stage kind, the plain data its panel draws (matrices with labels and colour scales,
bars, titles, notes), built Qt-free from (trace, stage, display settings). `view_for` picks the builder.

Every stage kind has one: the tokens, embeddings, positional encoding and layer input, Q/K/V, the score maps,
the mask, the heads grid, the token → token lines, weights·V, concat, W_O, add & norm, FFN, the output bars,
LayerNorm vs BatchNorm, the √dₖ explainer, the logit lens, the mixture of experts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.present.stages import MOE, NORM_COMPARE, Stage, ViewState
from attnlab.present.views.addnorm import addnorm_view
from attnlab.present.views.attention import map_view, mask_view, qkv_view
from attnlab.present.views.disentangled import term_view
from attnlab.present.views.factorised import FACTORISED, factorised_view
from attnlab.present.views.ffn import ffn_view
from attnlab.present.views.heads import heads_view
from attnlab.present.views.inputs import embed_view, input_sum_view, tokens_view
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

Builder = Callable[..., Any]

BUILDERS: dict[str, Builder] = {
    "tokens": tokens_view,
    "embed": embed_view,
    "pos": positional_view,
    "input": input_sum_view,
    "qkv": qkv_view,
    "scores": map_view,
    "scaled": map_view,
    "masked": map_view,
    "weights": map_view,
    "mask": mask_view,
    "heads": heads_view,
    "lines": lines_view,
    "context": site_vector_view,
    "concat": site_vector_view,
    "attn_out": site_vector_view,
    "addnorm": addnorm_view,
    "ffn": ffn_view,
    names.LOGITS: output_view,
    names.PROBS: output_view,
    NORM_COMPARE: norm_compare_view,
    "scale_why": scale_why_view,
    "qk_norm": qk_norm_view,  # w-norms
    "capped": map_view,
    "post_norm": addnorm_view,
    FACTORISED: factorised_view,
    **{term: term_view for term in names.DISENTANGLED_TERMS},  # DeBERTa's score terms
    **{term: term_view for term in names.RELATIVE_KEY_TERMS},  # BERT relative_key's score terms
    names.LENS: lens_view,
    MOE: moe_view,
    "bias": bias_view,  # the position bias (ALiBi) and the scores with it
    "biased": map_view,
}
# kinds only some imported families' runs have (the classroom models never show them)
FAMILY_ONLY_KINDS = frozenset({"qk_norm", "capped", "post_norm", FACTORISED})  # kinds only imported families have
FAMILY_ONLY_KINDS |= frozenset(names.RELATIVE_KEY_TERMS)  # BERT relative_key's score terms


def view_for(trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None) -> Any:
    """The view-model of `stage` (a MessageView when the run cannot show it); ValueError for a kind without one."""
    builder = BUILDERS.get(stage.kind)
    if builder is None:
        raise ValueError(f"no view-model for stage kind {stage.kind!r} yet; known: {', '.join(sorted(BUILDERS))}")
    return builder(trace, stage, display, vocab)
