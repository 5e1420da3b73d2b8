"""The factorised embedding (ALBERT, ELECTRA) as plain data, in its two steps: each token's row E[id] of the
narrow table (embed_dim = e wide), the e-wide LayerNorm(E[id] + P[pos] + T[type]) the model computes from it, and
that vector times W_proj (+ b): d_model wide, the first layer's input."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing, missing_message, tokens
from attnlab.present.stage_types import FACTORISED, Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view


@dataclass(frozen=True)
class FactorisedView:
    token: MatrixView  # [T, e] E[id]: each token's row of the narrow table
    normed: MatrixView  # [T, e] LayerNorm(E[id] + P + T): what the projection reads
    projected: MatrixView  # [T, d] normed · W_proj + b: the first layer's input
    e: int
    d: int
    note: str

    kind = FACTORISED


def factorised_entries(side: str) -> tuple[str, str, str]:
    """(E[id], LayerNorm(sum), projected) trace names of one side."""
    return (
        names.side_entry(side, "embed"),
        names.norm_entry(names.embed_norm(side), "out"),
        names.side_entry(side, names.EMBED_PROJ),
    )


def factorised_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> FactorisedView | MessageView:
    side = stage.side or "src"
    wanted = factorised_entries(side)
    lost = missing(trace, list(wanted))
    if lost:
        return MessageView(FACTORISED, missing_message("The factorised embedding", lost))
    token, normed, projected = (array(trace, name) for name in wanted)  # [T, e], [T, e], [T, d]
    labels = tokens(trace, side, token.shape[0])
    e, d = token.shape[1], projected.shape[1]
    bound = max(float(np.abs(p).max()) for p in (token, normed, projected) if p.size) or 1.0

    def shown(name: str, values: np.ndarray, title: str) -> MatrixView:
        return matrix_view(name, values, labels, title, levels=(-bound, bound), symmetric=None)

    return FactorisedView(
        token=shown(wanted[0], token, f"E[id]: the token's row, {e} wide"),
        normed=shown(wanted[1], normed, f"LayerNorm(E[id] + P + T), {e} wide"),
        projected=shown(wanted[2], projected, f"× W_proj + b: {d} wide = layer input"),
        e=e,
        d=d,
        note=(
            f"Step 1: each token reads a row of a narrow table ({e} numbers), and its position and token type "
            f"are added and normalised in those {e} dimensions. Step 2: one learned linear map W_proj "
            f"({e} × {d}) + b widens every token's vector to the model's {d}: this is what the first layer reads."
        ),
    )
