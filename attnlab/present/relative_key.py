"""BERT's relative_key / relative_key_query positions in words and formulas: the stage titles of its terms,
the formula of each, the score as their sum and the distance map. Qt-free. The arithmetic is
engine/relative_key.py's; every number here is read from the trace or its config."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present.explain_page import DK, page, shape_of
from attnlab.present.facts import array, scaling_on, site_name

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace
    from attnlab.present.stage_types import Stage

TERMS = names.RELATIVE_KEY_TERMS  # ("rel_key", "rel_query"): the stage kinds of the terms
TITLES = {"rel_key": "query · distance Q·R(i−j)ᵀ", "rel_query": "key · distance K·R(i−j)ᵀ"}
CELL = {"rel_key": "cell (i, j) = Qᵢ · R[i − j + M − 1]", "rel_query": "cell (i, j) = Kⱼ · R[i − j + M − 1]"}
SUMMANDS = {"rel_key": "Q·R(i−j)ᵀ", "rel_query": "K·R(i−j)ᵀ"}
WHAT = {
    "rel_key": "How much the word at query i wants to look at a key at distance i − j: query i against the "
    "learned vector of that distance.",
    "rel_query": "How much the word at key j wants to be looked at from distance i − j: key j against the same "
    "learned vector of the distance (relative_key_query adds both).",
}


def terms_of(config: ModelConfig) -> tuple[str, ...]:
    """The model's terms (engine/relative_key.terms_of says the same to the engine)."""
    return {"key": TERMS[:1], "key_query": TERMS}.get(config.rel_key_terms, ())


def run_terms(trace: Trace) -> tuple[str, ...]:
    """The terms this run added: none with the positions switched off."""
    return terms_of(trace.config) if trace.options.positional else ()


def with_terms(config: ModelConfig, titles: dict[str, str]) -> dict[str, str]:
    """An attention site's {stage kind: title} with BERT's relative terms after Q, K, V and the score as
    their sum; the titles unchanged for every other model."""
    terms = terms_of(config)
    if not terms:
        return titles
    out: dict[str, str] = {}
    for kind, title in titles.items():
        out[kind] = title
        if kind == "qkv":
            out.update({term: TITLES[term] for term in terms})
    out["scores"] = "score = QKᵀ + " + " + ".join(SUMMANDS[t] for t in terms)
    return out


def formula(config: ModelConfig, kind: str) -> str:
    m = config.rel_key_span
    side = "Q<sub>i</sub>" if kind == "rel_key" else "K<sub>j</sub>"
    return (
        f"A<sub>ij</sub> = {side} · R<sub>i − j + {m - 1}</sub>, &nbsp; R: {2 * m - 1} learned rows of {DK} "
        "numbers, one table per layer, shared by its heads"
    )


def sum_formula(config: ModelConfig) -> str:
    """scores = (Q Kᵀ + Q·R(i−j)ᵀ [+ K·R(i−j)ᵀ]) / √dₖ, as the model computes them."""
    terms = "".join(f" + {SUMMANDS[t]}" for t in terms_of(config))
    return f"scores = (Q Kᵀ{terms}) / √{DK}"


def table_rows(trace: Trace) -> np.ndarray:
    """The row of R each cell reads [Tq, Tk]: i − j + M − 1, from the recorded distance i − j."""
    distance = array(trace, names.rel_entry("enc", "distance")).astype(np.int64)  # [T, T]
    return distance + trace.config.rel_key_span - 1


def map_title(trace: Trace, kind: str) -> str | None:
    """The title of such a site's score map (None: the usual title)."""
    terms = run_terms(trace)
    if kind not in ("scores", "scaled") or not terms:
        return None
    if kind == "scaled":
        return "score / √dₖ" if scaling_on(trace) else None
    return "score = QKᵀ + " + " + ".join(SUMMANDS[t] for t in terms)


def map_text(trace: Trace, kind: str) -> str | None:
    """The sentence under such a site's score map (None: the usual sentence)."""
    if kind != "scores" or not terms_of(trace.config):
        return None
    if not trace.options.positional:
        return "Q Kᵀ only: the positions are switched off, so no relative term is added and order is lost."
    added = " + ".join(SUMMANDS[t] for t in run_terms(trace))
    return f"Cell (i, j) is Qᵢ · Kⱼ + {added}: the term maps before it, added cell by cell; ÷ √dₖ comes next."


def relative_key_page(stage: Stage, trace: Trace) -> str | None:
    """The explanation of such a site's term or score stage; None for any other stage."""
    config, site, kind = trace.config, stage.site or "", stage.kind
    if not site or not terms_of(config) or kind not in (*TERMS, "scores", "scaled"):
        return None
    where = site_name(site)
    shape = shape_of(trace, names.site_entry(site, "q")) or (0, 0, 0)  # [H, T, dk]
    shapes = f"{shape[0]} heads × {shape[1]} queries × {shape[1]} keys; dₖ = {shape[-1]}." if len(shape) == 3 else ""
    table = (
        f"R is this layer's distance table (position_embedding_type {config_type(config)}): "
        f"{2 * config.rel_key_span - 1} rows for the distances −{config.rel_key_span - 1} … "
        f"{config.rel_key_span - 1}, each one head wide; the model adds no absolute positions to its inputs."
    )
    if kind == "scaled":
        on = scaling_on(trace)
        return page(
            f"Divide by √dₖ · {where}",
            f"S′ = S / √{DK}, &nbsp; S = Q Kᵀ" + "".join(f" + {SUMMANDS[t]}" for t in run_terms(trace)),
            [
                f"The whole score, relative terms included, is divided by √dₖ = √{shape[-1]}, as BERT does."
                if on
                else "Scaling is switched OFF in this run: these are the raw sums."
            ],
            shapes,
        )
    if kind == "scores":
        return page(
            f"The score adds the relative terms · {where}",
            sum_formula(config),
            ["The content score Q Kᵀ plus the term maps before it, cell by cell.", table],
            shapes,
        )
    return page(f"{TITLES[kind]} · {where}", formula(config, kind), [WHAT[kind], table], shapes)


def config_type(config: ModelConfig) -> str:
    return "relative_key_query" if config.rel_key_terms == "key_query" else "relative_key"
