"""Short explanations of each stage: what it computes, its formula, and the live shapes of this run.

`explanation_html(stage, trace)` returns a small HTML fragment (a QLabel / QTextBrowser renders it). Every
number in it is read from the trace, so flipping a toggle (heads, scaling, masks, norm placement, positional
encoding, residuals) changes the text along with the pictures; how the run was made is read from the
RunOptions it carries (see `attnlab.present.facts`). Qt-free.

The pages are written by kind: explain_inputs (tokens, embedding, positions, layer input), explain_attention
(one site's steps), explain_layers (add & norm, LN vs BN, FFN), explain_imported (what imported architectures do
differently), explain_study (notes of the study views); the output pages are here. explain_page holds the one
page layout they share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import explain_bertish, explain_imported
from attnlab.present import formulas as fm
from attnlab.present.disentangled import disentangled_page
from attnlab.present.explain_attention import attention_page
from attnlab.present.explain_inputs import inputs_page
from attnlab.present.explain_layers import addnorm_page, ffn_page, norm_compare_page
from attnlab.present.explain_lens import lens_page
from attnlab.present.explain_moe import moe_page
from attnlab.present.explain_norms import local_rope_note, norms_page
from attnlab.present.explain_page import page, shape_of
from attnlab.present.explain_study import study_notes
from attnlab.present.relative_key import relative_key_page
from attnlab.present.stages import MOE, NORM_COMPARE, Stage
from attnlab.present.unsure import unsure_sentence

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def _output(stage: Stage, trace: Trace) -> str:
    shape = shape_of(trace, names.LOGITS) or shape_of(trace, names.PROBS) or (0, 0)
    t, v = shape[0], shape[1] if len(shape) > 1 else 0
    decoder = names.side_entry("tgt", "tokens") in trace
    pos_word = (
        "At decoder position t the distribution is the model's guess for token t + 1; greedy "
        "generation appends the most likely token and runs again (autoregressive decoding)."
        if decoder
        else "An encoder-only model predicts a token at every position (e.g. to fill "
        "in a masked word), so each position has its own distribution."
    )
    if stage.kind == names.LOGITS:
        return page(
            "Output logits",
            fm.logits_formula(trace.config),
            [
                "The final vector of each position is multiplied by an output matrix with one column per "
                "vocabulary entry; many models reuse the embedding table for it (tied weights).",
                "A logit is an unnormalised score: only differences between logits matter.",
                pos_word,
            ],
            f"[{t} positions × {v} vocabulary entries].",
        )
    return page(
        "Next-token probabilities",
        "p = softmax(logits / T)",
        [
            "softmax turns the logits of a position into probabilities that sum to 1.",
            "The temperature T reshapes them: T &lt; 1 sharpens the distribution toward the top token, T &gt; 1 "
            "flattens it.",
            pos_word,
            unsure_sentence(trace),
        ],
        f"[{t} × {v}], each row sums to 1.",
    )


def explanation_html(stage: Stage, trace: Trace) -> str:
    """A short explanation of `stage` with its formula and the live shapes from `trace` (HTML)."""
    return (
        _explanation(stage, trace)
        + local_rope_note(stage, trace)  # w-norms: Gemma 3's local rotary base
        + explain_bertish.shared_layers_note(stage, trace)  # ALBERT: shared layers
    )


def _explanation(stage: Stage, trace: Trace) -> str:
    deberta = disentangled_page(stage, trace) or relative_key_page(stage, trace)  # score terms, their sum
    if deberta is not None:
        return deberta + explain_imported.extra_notes(stage, trace)
    normed = norms_page(stage, trace)  # w-norms: QK-norm, soft-capping
    if normed is not None:
        return normed
    bertish = explain_bertish.bertish_explanation(stage, trace)  # factorised embedding, ELECTRA's output
    if bertish is not None:
        return bertish
    imported = explain_imported.imported_explanation(stage, trace)  # RMSNorm, SwiGLU, GQA
    if imported is not None:
        return imported
    if stage.kind in ("tokens", "embed", "pos", "input"):
        return inputs_page(stage, trace) + explain_imported.extra_notes(stage, trace)
    if stage.kind in (names.LOGITS, names.PROBS):
        return _output(stage, trace) + explain_imported.extra_notes(stage, trace)
    if stage.kind == names.LENS:
        return lens_page(trace)
    if stage.kind == MOE:
        return moe_page(stage, trace)
    if stage.kind == "addnorm":
        return addnorm_page(stage, trace)
    if stage.kind == NORM_COMPARE:
        return norm_compare_page(stage, trace)
    if stage.kind == "ffn":
        return ffn_page(stage, trace)
    if stage.site:
        return (
            attention_page(stage, trace) + study_notes(stage.site, trace) + explain_imported.extra_notes(stage, trace)
        )
    return page(stage.title, "", ["No explanation is written for this step yet."])
