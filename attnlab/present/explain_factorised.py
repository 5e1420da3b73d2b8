"""The explanation of the factorised embedding (kind names.EMBED_PROJ, present/kinds.py; ALBERT, ELECTRA): the
map from the narrow embedding width e to d_model, and the sentences the input and output pages add for such a
model. Its view is views/factorised.py. Qt-free; every number is read from the trace and its config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present.explain_page import DM, page, shape_of
from attnlab.present.stages import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

PROJ = "W<sub>proj</sub>"


def factorised_formula(e: int, d: int) -> str:
    return (
        f"X = LayerNorm(E[id] + P[pos] + T[type]) · {PROJ} + b &nbsp; (E: vocabulary × {e}; {PROJ}: {e} × {d}; b: {d})"
    )


def factorised_page(stage: Stage, trace: Trace) -> str:
    """The stage after the layer input of a factorised model: the map from embed_dim to d_model."""
    cfg = trace.config
    e, d, vocab = cfg.embed_width, cfg.d_model, cfg.src_vocab_size
    shape = shape_of(trace, names.side_entry(stage.side or "src", names.EMBED_PROJ)) or (0, d)
    saved = vocab * d - (vocab * e + e * d + d)
    return page(
        "Factorised embedding: e → d_model",
        factorised_formula(e, d),
        [
            f"This model's embedding tables are only e = {e} numbers wide, while its layers work in {DM} = {d}. "
            "The step before built each token's vector in those e dimensions: its row E[id], plus its "
            "position's and token type's rows, through the embedding LayerNorm.",
            f"Here one learned linear map {PROJ} + b widens every token's vector to {d} numbers; the same map "
            "serves every token, so a word's identity still lives in its narrow row.",
            f"A full-width table would hold vocabulary × {DM} = {vocab:,} × {d} = {vocab * d:,} numbers; "
            f"the two factors hold {vocab:,} × {e} + {e} × {d} + {d} = {vocab * e + e * d + d:,}"
            + (f", {saved:,} fewer." if saved > 0 else "."),
        ],
        f"[{shape[0]}, {e}] · [{e}, {d}] + [{d}] → [{shape[0]}, {d}], the first layer's input.",
    )


def factorised_sentences(trace: Trace, side: str) -> list[str]:
    """For the embedding and layer-input pages of a factorised model: the tables are e wide, not d_model."""
    if names.side_entry(side, names.EMBED_PROJ) not in trace:
        return []
    e, d = trace.config.embed_width, trace.config.d_model
    return [
        f"Its embedding tables are factorised: E, P and T are {e} wide (not {DM} = {d}), so the sum and its "
        f"LayerNorm are {e} wide too; the next stage maps them to {d} by {PROJ}."
    ]


def head_sentences(trace: Trace) -> list[str]:
    """For the output pages of a factorised masked LM (ALBERT, ELECTRA's generator): its head narrows to e."""
    cfg = trace.config
    if not (cfg.embed_dim and cfg.output_head):
        return []
    return [
        f"Its dense layer maps {DM} = {cfg.d_model} back to e = {cfg.embed_dim}, the width of the embedding "
        f"table E ({cfg.src_vocab_size:,} × {cfg.embed_dim}) whose rows score every vocabulary entry."
    ]
