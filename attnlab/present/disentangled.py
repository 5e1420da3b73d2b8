"""DeBERTa's disentangled attention in words and formulas: the stage titles of its three score terms, the
formulas of each, and the explanation pages of the terms, their sum and the √(dₖ · factor) scale. Qt-free.
The arithmetic is engine/disentangled.py's; every number here is read from the trace or its config."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present.explain_page import DK, page, shape_of
from attnlab.present.facts import scaling_on, site_name

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace
    from attnlab.present.stage_types import Stage

TERMS = names.DISENTANGLED_TERMS  # ("c2c", "c2p", "p2c"): the stage kinds of the three terms
TITLES = {
    "c2c": "content → content Qc·Kcᵀ",
    "c2p": "content → position Qc·Krᵀ",
    "p2c": "position → content Kc·Qrᵀ",
}
FORMULAS = {
    "c2c": "A<sup>c→c</sup><sub>ij</sub> = Qc<sub>i</sub> · Kc<sub>j</sub>",
    "c2p": (
        "A<sup>c→p</sup><sub>ij</sub> = Qc<sub>i</sub> · Kr<sub>δ(i,j)</sub>, &nbsp; Kr = R W<sub>K,r</sub>, &nbsp; "
        "δ(i, j) = clamp(bucket(i − j) + k, 0, 2k − 1)"
    ),
    "p2c": (
        "A<sup>p→c</sup><sub>ij</sub> = Kc<sub>j</sub> · Qr<sub>δ(i,j)</sub>, &nbsp; Qr = R W<sub>Q,r</sub>, &nbsp; "
        "δ(i, j) = clamp(−bucket(j − i) + k, 0, 2k − 1)"
    ),
}
WHAT = {
    "c2c": "How well the word at query i matches the word at key j, ignoring where they are: the plain Q Kᵀ of "
    "every Transformer.",
    "c2p": "How much the word at query i wants to look at a key at a given relative distance: query i against "
    "the projected relative embedding of the distance from i to j.",
    "p2c": "How much the word at key j wants to be looked at from a given relative distance: key j against the "
    "projected relative embedding of the query's position seen from j. It is gathered key by key, with the "
    "distance j − i negated (the transposed distance), and the map turned back to queries × keys; as "
    "bucket(−x) = −bucket(x) each cell reads the same row δ(i, j) as content → position, met by the key's "
    "content instead of the query's.",
}


def scale_factor(config: ModelConfig) -> int:
    """1 + the number of position terms (engine/disentangled.scale_factor says the same to the engine)."""
    return 1 + len(config.disentangled)


def with_terms(config: ModelConfig, titles: dict[str, str], scale: bool) -> dict[str, str]:
    """An attention site's {stage kind: title} with DeBERTa's terms after Q, K, V, the score as their sum and
    the scale √(dₖ · factor); the titles unchanged for every other model."""
    if not config.disentangled:
        return titles
    out: dict[str, str] = {}
    terms = ("c2c", *config.disentangled)
    for kind, title in titles.items():
        out[kind] = title
        if kind == "qkv":
            out.update({term: TITLES[term] for term in terms})
    out["scores"] = "score = " + " + ".join(terms)
    if scale:
        out["scaled"] = f"÷ √({scale_factor(config)}·dₖ)"
    return out


def sum_formula(config: ModelConfig) -> str:
    terms = " + ".join(f"A<sup>{t[0]}→{t[2]}</sup>" for t in ("c2c", *config.disentangled))
    return f"S = {terms}"


def scaled_formula(config: ModelConfig, scale: bool) -> str:
    if not scale:
        return f"S′ = S &nbsp; (÷√({scale_factor(config)}·{DK}) switched off)"
    return f"S′ = S / √({scale_factor(config)} · {DK}) &nbsp; (1 + {len(config.disentangled)} position terms)"


def scale_why_words(config: ModelConfig, dk: int) -> str:
    """What the "why ÷ √dₖ?" heading adds for DeBERTa: the division its scaled scores had ('' for others)."""
    if not config.disentangled:
        return ""
    factor = scale_factor(config)
    return f" · this model divides by √({factor}·dₖ) ≈ {math.sqrt(factor * dk):.2f}"


def scaled_note(config: ModelConfig, dk: int) -> str:
    """The sentence under DeBERTa's ÷ map: the divisor with this run's numbers."""
    factor = scale_factor(config)
    return (
        f"Every score is divided by √({factor} · dₖ) = √({factor} · {dk}) ≈ {math.sqrt(factor * dk):.2f}: DeBERTa "
        f"adds {factor} dot products of dₖ numbers, so it divides by √{factor} more than √dₖ to keep the spread."
    )


def run_terms(trace: Trace) -> tuple[str, ...]:
    """The terms this run added: c2c, and the position terms unless the positions are switched off."""
    return ("c2c", *trace.config.disentangled) if trace.options.positional else ("c2c",)


def map_title(trace: Trace, kind: str) -> str | None:
    """The title of a DeBERTa site's score or ÷ map (None: the usual title)."""
    config = trace.config
    if not config.disentangled:
        return None
    if kind == "scores":
        return "score = " + " + ".join(run_terms(trace))
    if kind == "scaled" and scaling_on(trace):
        return f"score / √({scale_factor(config)}·dₖ)"
    return None


def map_text(trace: Trace, site: str, kind: str) -> str | None:
    """The sentence under a DeBERTa site's score or ÷ map (None: the usual sentence)."""
    config = trace.config
    if not config.disentangled or kind not in ("scores", "scaled"):
        return None
    if kind == "scores":
        off = "" if trace.options.positional else " The positions are switched off: no position terms."
        return "Cell (i, j) is the sum of the term maps before it: " + " + ".join(run_terms(trace)) + "." + off
    if not scaling_on(trace):
        return None
    q = shape_of(trace, names.site_entry(site, "q")) or (0, 0, 0)
    return scaled_note(config, q[-1])


def disentangled_page(stage: Stage, trace: Trace) -> str | None:
    """The explanation of a DeBERTa site's term, sum or scale stage; None for any other stage."""
    config, site, kind = trace.config, stage.site or "", stage.kind
    if not site or not config.disentangled or kind not in (*TERMS, "scores", "scaled"):
        return None
    where = site_name(site)
    shape = shape_of(trace, names.site_entry(site, "q")) or (0, 0, 0)  # [H, T, dk]
    h, t, dk = shape[0], shape[1] if len(shape) > 1 else 0, shape[2] if len(shape) > 2 else 0
    shapes = f"{h} heads × {t} queries × {t} keys; dₖ = {dk}."
    if kind == "scores":
        return page(
            f"The score is the sum of the terms · {where}",
            sum_formula(config),
            [
                "DeBERTa keeps what a token is (content) and where it is (relative position) apart: the content "
                "vectors carry no position, and each pair's score adds separate maps.",
                "This map is the cell-by-cell sum of the previous maps.",
            ],
            shapes,
        )
    if kind == "scaled":
        on = scaling_on(trace)
        return page(
            f"Divide by √({scale_factor(config)}·dₖ) · {where}",
            scaled_formula(config, on),
            [scaled_note(config, dk) if on else "Scaling is switched OFF in this run: these are the raw sums."],
            shapes,
        )
    return page(f"{TITLES[kind]} · {where}", FORMULAS[kind], [WHAT[kind], relative_sentence(config)], shapes)


def relative_sentence(config: ModelConfig) -> str:
    """What R, k, the buckets and the projections are in this model."""
    k = config.rel_span
    buckets = (
        f"distances up to ±{config.rel_buckets // 2} keep their own row, longer ones share log-spaced rows "
        f"reaching {config.rel_max_distance}"
        if config.rel_buckets
        else f"distances beyond ±{k} share the end rows"
    )
    proj = (
        "W_Q and W_K themselves (share_att_key)"
        if config.rel_share_key
        else "their own matrices (pos_query_proj, pos_key_proj)"
    )
    norm = ", after its own LayerNorm" if config.rel_norm else ""
    return (
        f"R is the table of {2 * k} relative embeddings{norm}; {buckets}. Its projections are {proj}. "
        "The right-hand map shows δ: which row of R each cell reads."
    )
