"""The vectors after attention at one site as plain data: weights·V of the chosen head, the heads side by side
(concat) and the W_O output."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, missing, missing_message
from attnlab.present.stages import Stage, ViewState
from attnlab.present.texts import counted
from attnlab.present.views.model import MatrixView, MessageView, matrix_view
from attnlab.present.views.site import SiteView

# What each kind shows, and what the sentence calls it when the run lacks it.
SITE_VECTOR_STEPS = {
    "context": ("context", "The context (weights · V)"),
    "concat": ("concat", "The concatenated heads"),
    "attn_out": ("out", "The attention output"),
}


@dataclass(frozen=True)
class SiteVectorView:
    kind: str  # "context", "concat" or "attn_out"
    matrix: MatrixView  # [Tq, d_k] (context) or [Tq, d] (concat, attn_out)
    note: str
    head: int
    n_heads: int
    head_width: int  # d_k: the columns of one head in the concatenation
    boundaries: tuple[float, ...] = ()  # concat: x of the lines between heads (cell edges, -0.5 offset)


def site_vector_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> SiteVectorView | MessageView:
    site, kind = stage.site or "", stage.kind
    step, what = SITE_VECTOR_STEPS[kind]
    name = names.site_entry(site, step)
    if missing(trace, [name]):
        return MessageView(kind, missing_message(what, [name]))
    sv = SiteView(trace, site, display, vocab)
    values = array(trace, name)  # [H, Tq, d_k] (context) or [Tq, d]
    if kind == "context":
        ctx = values[sv.head]  # [Tq, d_k]
        return SiteVectorView(
            kind,
            matrix_view(
                name, ctx, sv.rows, f"weights · V · {sv.name} · {sv.head_text}", axes=(sv.query_axis, "d_k dimension")
            ),
            f"Row i is a weighted average of the value vectors, weighted by row i of the "
            f"attention weights: {ctx.shape[0]} queries × d_k = {ctx.shape[1]}.",
            sv.head,
            sv.n_heads,
            ctx.shape[1],
        )
    d = values.shape[1]
    width = trace.config.attn_width if trace.options.projections else trace.config.d_model  # H·d_k (head_dim)
    dk = width // max(sv.n_heads, 1)
    if kind == "concat":
        outputs = "The one head's output" if sv.n_heads == 1 else f"The {sv.n_heads} heads' outputs"
        return SiteVectorView(
            kind,
            matrix_view(
                name,
                values,
                sv.rows,
                f"concat(head 1 … head {sv.n_heads}) · {sv.name}",
                axes=(sv.query_axis, f"{_concat_axis(d, trace.config.d_model)} ({counted(sv.n_heads, 'head')} × {dk})"),
            ),
            f"{outputs} (d_k = {dk} each) side by side give back "
            f"{_concat_width(d, trace.config.d_model)} numbers per token; the orange box is {sv.head_text}.",
            sv.head,
            sv.n_heads,
            dk,
            tuple(h * dk - 0.5 for h in range(1, sv.n_heads)),
        )
    return SiteVectorView(
        kind,
        matrix_view(name, values, sv.rows, f"concat · W_O · {sv.name}", axes=(sv.query_axis, "model dimension")),
        f"W_O ({width} × {d}) mixes the heads' results into one vector per token; then it is added to the layer "
        "input (residual).",
        sv.head,
        sv.n_heads,
        dk,
    )


def _concat_width(width: int, d_model: int) -> str:
    """'d_model = 32', or for heads with a head_dim of their own 'H·d_k = 64 (not d_model = 32)'."""
    return f"d_model = {width}" if width == d_model else f"H·d_k = {width} (not d_model = {d_model})"


def _concat_axis(width: int, d_model: int) -> str:
    return "model dimension" if width == d_model else "H·d_k (the heads' own width)"
