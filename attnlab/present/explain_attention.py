"""Explanations of the attention stages of one site: Q/K/V, scores, ÷√dₖ (and why), the mask, the weights, the
heads, weights · V, the concatenation and W_O. Qt-free; `explain.explanation_html` dispatches here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present import disentangled, position_bias, relative_key, trained_scale
from attnlab.present import formulas as fm
from attnlab.present import head_width as hw
from attnlab.present.explain_page import DK, page, shape_of, tokens_of
from attnlab.present.explain_study import study_notes
from attnlab.present.facts import scaling_on, site_name, site_sides
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace

FORMULAS = {  # the formulas that do not depend on the model; the others come from present.formulas
    "scores": ("S = Q Kᵀ, &nbsp; S<sub>ij</sub> = q<sub>i</sub> · k<sub>j</sub>"),
    "context": (
        "head<sub>h</sub> = A<sub>h</sub> V<sub>h</sub>, &nbsp; "
        "z<sub>i</sub> = Σ<sub>j</sub> A<sub>ij</sub> v<sub>j</sub>"
    ),
}


@dataclass(frozen=True)
class SiteShapes:
    """What every attention page of one site says: where it is, and the live sizes of this run."""

    where: str  # "encoder layer 1 self-attention", …
    h: int  # heads
    tq: int  # queries
    tk: int  # keys
    dk: int  # numbers per head
    cross: bool  # queries and keys from different sides

    @property
    def heads(self) -> str:
        return f"{self.h} heads" if self.h != 1 else "1 head"


def site_shapes(site: str, trace: Trace) -> SiteShapes:
    q_side, k_side = site_sides(site)
    q_name = names.site_entry(site, "q")
    w = shape_of(trace, names.site_entry(site, "weights")) or shape_of(trace, q_name) or (0, 0, 0)  # [H, Tq, Tk]
    q = shape_of(trace, q_name) or (w[0], w[1], 0)  # [H, Tq, dk]
    return SiteShapes(
        site_name(site), w[0], w[1], w[2] if len(w) > 2 else 0, q[2] if len(q) > 2 else 0, q_side != k_side
    )


SitePage = Callable[[Stage, "Trace", SiteShapes], str]  # one attention step's page, from the site's shapes


def site_step(site_page: SitePage) -> Callable[[Stage, Trace], str]:
    """The explanation of an attention step kind (present/kinds.py): its page from the site's live shapes, then
    the study toggles' notes (projections off, ablated heads)."""

    def explain(stage: Stage, trace: Trace) -> str:
        site = stage.site or ""
        return site_page(stage, trace, site_shapes(site, trace)) + study_notes(site, trace)

    return explain


def score_step(site_page: SitePage) -> Callable[[Stage, Trace], str]:
    """A score term, the score or the ÷ map: DeBERTa's or BERT relative_key's page where the model has those
    terms (their sum and scale), else `site_page` as a site step."""
    plain = site_step(site_page)

    def explain(stage: Stage, trace: Trace) -> str:
        special = disentangled.disentangled_page(stage, trace) or relative_key.relative_key_page(stage, trace)
        return special if special is not None else plain(stage, trace)

    return explain


# ---- the page of each step, in the order of the site ----------------------------------------------------------
def qkv_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    return _qkv_page(trace, s)


def scores_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    return _scores_page(s)


def scaled_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    if trained_scale.unscaled(trace.config):  # T5
        return trained_scale.scaled_page(s.where, s.dk, f"S′: {s.heads} × {s.tq} × {s.tk}.")
    return _scaled_page(trace, s, fm.layer_divisor(trace.config, stage.site or ""))


def scale_why_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    return _scale_why(s.where, s.dk)


def bias_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    """The position bias and the scores with it (present/position_bias.py)."""
    return position_bias.bias_page(stage.kind, trace, stage.site or "", s.where)


def mask_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    """The mask and the masked scores."""
    return _mask(trace, stage.site or "", stage.kind, s.where, s.h, s.tq, s.tk)


def weights_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    """The weights, the heads grid and the token → token lines."""
    return _weights_page(stage.kind, s, scaling_on(trace), trace.config)


def mixing_page(stage: Stage, trace: Trace, s: SiteShapes) -> str:
    """weights · V, the heads' concat and × W_O."""
    out_formula = fm.out_projection_formula(trace.config, trace.options.projections)
    return _mixing_page(stage.kind, s, out_formula, trace.config.d_model)


def _qkv_page(trace: Trace, s: SiteShapes) -> str:
    source = (
        "Queries come from the decoder tokens; keys and values come from the encoder's final output, "
        "so each decoder position can read the whole source sentence."
        if s.cross
        else "Queries, keys and values are all computed from the same tokens (self-attention)."
    )
    rotary = not s.cross and fm.pe_kind(trace.config, trace.options) == "rotary"
    return page(
        f"Q, K, V · {s.where}",
        fm.qkv_formula(rotary, trace.config, trace.options.projections),
        [
            hw.projections_text(trace.config),
            source,
            f"Each result is cut into {s.heads} of {hw.dk_text(trace.config, s.h, s.dk)} numbers, and every head "
            "attends on its own.",
        ],
        f"Q: {s.h} heads × {s.tq} tokens × {s.dk}; K and V: {s.h} heads × {s.tk} tokens × {s.dk}.",
    )


def _scores_page(s: SiteShapes) -> str:
    return page(
        f"Scores QKᵀ · {s.where}",
        FORMULAS["scores"],
        [
            f"Each score is a dot product of {s.dk} pairs of numbers: large and positive when query i and "
            "key j point the same way, negative when they point apart.",
            "Row i of the map holds query i's scores against every key.",
            ""
            if not s.cross
            else "In cross-attention the map is rectangular: decoder positions down, source tokens across.",
        ],
        f"S: {s.heads} × {s.tq} queries × {s.tk} keys.",
    )


def _scaled_page(trace: Trace, s: SiteShapes, layer_divisor: int | None = None) -> str:
    """The ÷√dₖ page; `layer_divisor` l + 1 where GPT-2's scale_attn_by_inverse_layer_idx also divides by it."""
    off = not scaling_on(trace)
    state = (
        f"Scaling is switched OFF in this run, so these are the raw scores: with large {DK} "
        "the softmax becomes nearly one-hot and its gradients vanish."
        if off
        else f"Here √{DK} = √{s.dk} ≈ {math.sqrt(s.dk) if s.dk else 0:.2f}."
    )
    if trace.config.query_scale_dim and not off:  # Gemma 2: ÷ √query_pre_attn_scalar
        state = (
            f"This model divides by √query_pre_attn_scalar = √{trace.config.query_scale_dim:g} instead of "
            f"√{DK} = √{s.dk}: a constant chosen in training, not the head size."
        )
    if layer_divisor is not None and not off:
        state += (
            f" This model was trained with scale_attn_by_inverse_layer_idx: the scores of layer l are also "
            f"divided by l + 1, here by {layer_divisor}, so deeper layers start with flatter attention."
        )
    return page(
        f"{'Divide by √dₖ' if not off else 'Divide by √dₖ — switched off'} · {s.where}",
        fm.scaled_formula(not off, layer_divisor, trace.config),
        [
            f"If the numbers of q and k have mean 0 and variance 1, their dot product is a sum of {DK} "
            f"such products: its mean stays 0 but its variance grows to {DK}, its spread to "
            f"√{DK}.",
            f"Dividing by √{DK} brings the spread back to about 1 whatever the "
            "head size, which keeps the softmax in its sensitive range.",
            state,
        ],
        f"S′: {s.heads} × {s.tq} × {s.tk}.",
    )


def _scale_why(where: str, dk: int) -> str:
    return page(
        f"Why divide by √dₖ? · {where}",
        f"Var(q · k) = {DK} when every q<sub>i</sub>, k<sub>i</sub> has variance 1, so std(q · k) = √{DK}",
        [
            "Left: the scores of this site before and after the division, on the same bins, and each "
            "head's softmax entropy both ways (higher = attention spread over more keys; the dashed "
            "line is an even spread). Both are computed from the recorded raw scores and mask, "
            "whatever the run's scaling toggle says.",
            f"Right: q and k drawn at random with unit-variance entries. Their dot product's spread "
            f"grows as √{DK}; without the division the softmax gives almost all weight to one key "
            "(its largest weight tends to 1), where its gradients vanish.",
            f"This site has {DK} = {dk}, √{DK} ≈ {math.sqrt(dk) if dk else 0:.2f}.",
        ],
    )


def _weights_page(kind: str, s: SiteShapes, scale: bool, config: ModelConfig | None = None) -> str:
    """The softmax's output: the weights, the same as lines, all heads side by side."""
    where, h, tq, tk, dk, hs = s.where, s.h, s.tq, s.tk, s.dk, s.heads
    d = h * dk
    if kind in ("weights", "lines"):
        title = "Attention weights" if kind == "weights" else "Token → token lines"
        return page(
            f"{title} · {where}",
            fm.weights_formula(scale, config),
            [
                "softmax exponentiates every score of a row and divides by the row's total, so each "
                "row becomes weights between 0 and 1 that add up to 1; blocked keys (−∞) get "
                "exactly 0.",
                "A<sub>ij</sub> is how much of token j's value query i will take.",
                "The lines view draws these numbers as lines from each query to the keys it reads."
                if kind == "lines"
                else "",
            ],
            f"A: {hs} × {tq} × {tk}; every row sums to 1.",
        )
    return page(
        f"All heads · {where}",
        "MultiHead(X) = Concat(head<sub>1</sub>, …, head<sub>H</sub>) W<sub>O</sub>",
        [
            f"The model splits its {d} dimensions into {hs} of {dk}: together they cost about "
            "the "
            "same as one full-width head, but each can learn its own kind of relation.",
            "Changing the head count here re-reads the same weight matrices in a different "
            "split, so the patterns change without retraining.",
        ],
        f"{hs} × {tq} × {tk} weight maps.",
    )


def _mixing_page(kind: str, s: SiteShapes, out_formula: str, d_model: int) -> str:
    """What the heads hand over: weights · V, the concatenation, × W_O (`out_formula`: with the model's bias);
    the concatenation is H·d_k wide, d_model unless the model sets head_dim."""
    where, h, tq, tk, dk, hs = s.where, s.h, s.tq, s.tk, s.dk, s.heads
    d = h * dk
    if kind == "context":
        return page(
            f"Weights · V · {where}",
            FORMULAS["context"],
            [
                "Each query's result is a weighted average of the value vectors, using its row of attention weights.",
                "A token that puts most weight on one key mostly copies that key's value; spread weights blend many.",
            ],
            f"per head: [{tq} × {tk}] · [{tk} × {dk}] = [{tq} × {dk}]; {hs} in all.",
        )
    if kind == "concat":
        return page(
            f"Concatenate the heads · {where}",
            "Concat(head<sub>1</sub>, …, head<sub>H</sub>)",
            [
                hw.concat_text(h, dk, d_model),
                "Nothing is mixed yet: each block of columns still comes from exactly one head.",
            ],
            f"[{tq} × {d}].",
        )
    return page(
        f"Output projection W_O · {where}",
        out_formula,
        [
            hw.out_projection_text(d, d_model),
            "This vector is what the residual connection adds to the layer's input in the next step.",
        ],
        f"[{tq} × {d}] · [{d} × {d_model}] = [{tq} × {d_model}].",
    )


def _mask(trace: Trace, site: str, kind: str, where: str, h: int, tq: int, tk: int) -> str:
    mask = trace.get(names.site_entry(site, "mask"))
    blocked = np.isneginf(mask.numpy()) if mask is not None else np.zeros((tq, tk), bool)
    n_blocked = int(blocked.sum())
    # every key after the query blocked, row by row (no index arrays: 0.5 GiB of them at 8,192 tokens)
    causal = tq == tk and tq > 1 and bool((np.triu(blocked, 1).sum(axis=1) == np.arange(tq - 1, -1, -1)).all())
    toks = tokens_of(trace, site_sides(site)[1])
    pads = sum(t == "<pad>" for t in toks)
    state = []
    state.append(
        "The causal (look-ahead) mask is on here: query i may only read keys 0 … i, because when "
        "the whole target is fed at once the model must not peek at the word it has to predict."
        if causal
        else "No causal mask at this site: every query may read every key it is allowed."
    )
    if pads:
        state.append(f"{pads} &lt;pad&gt; key(s) are blocked by the padding mask.")
    window = fm.sliding_window(trace.config, site)
    if window:
        state.append(
            f"This model uses sliding-window attention: query i reads only the {window} latest keys (itself "
            f"and the {window - 1} before it), so the allowed cells form a band of width {window} along the "
            "diagonal; what lies further back reaches it only through earlier layers."
        )
    if kind == "mask":
        return page(
            f"The mask · {where}",
            fm.mask_formula(window, causal),
            [
                "Adding −∞ makes e<sup>score</sup> exactly 0, so a blocked key gets no weight "
                "at all "
                "while the allowed ones still share a total of 1.",
                *state,
                "One [Tq × Tk] mask is shared by all heads. Click cells to block or free them.",
            ],
            f"M: [{tq} × {tk}], {n_blocked} of {tq * tk} cells blocked.",
        )
    return page(
        f"Masked scores · {where}",
        fm.masked_formula(scaling_on(trace), trace.config),
        [
            "The mask is added to the scaled scores: allowed cells keep their value, blocked cells become −∞ "
            "(hatched).",
            *state,
        ],
        f"S″: {h} heads × {tq} × {tk}, {n_blocked} cells −∞ in every head.",
    )
