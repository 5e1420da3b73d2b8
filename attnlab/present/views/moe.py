"""A sparse mixture of experts as plain data (engine/moe.py): the router's probabilities, tokens × experts, with
each token's chosen experts marked by their renormalised weight, and the weighted sum of the chosen experts'
outputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, layer_name, layer_side, missing, missing_message, row_labels
from attnlab.present.stages import MOE, Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view


@dataclass(frozen=True)
class MoEView:
    router: MatrixView  # [T, E]: softmax of the router logits, rows tokens, columns experts
    chosen: np.ndarray  # bool [T, E]: the experts each token is sent to
    weights: np.ndarray  # [T, E]: the renormalised weight of each chosen expert (0 elsewhere)
    marks: list[tuple[int, int, str]]  # (row, expert, text) for every chosen cell: its weight
    out: MatrixView  # [T, d]: Σ over the chosen experts of weight × expert output
    load: list[int]  # [E]: how many tokens each expert serves
    k: int
    summary: str
    note: str

    kind = MOE


def chosen_cells(chosen: np.ndarray, weights: np.ndarray, n_experts: int) -> tuple[np.ndarray, np.ndarray]:
    """chosen [T, k] expert ids and their weights [T, k] -> (bool [T, E] mask, [T, E] weights, 0 elsewhere)."""
    rows = np.arange(chosen.shape[0])[:, None]  # [T, 1]
    mask = np.zeros((chosen.shape[0], n_experts), dtype=bool)
    spread = np.zeros((chosen.shape[0], n_experts), dtype=np.float32)
    mask[rows, chosen] = True
    spread[rows, chosen] = weights
    return mask, spread


def moe_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> MoEView | MessageView:
    layer = stage.layer or ""
    wanted = [names.ffn_entry(layer, p) for p in ("router_probs", "chosen", "expert_weights", "out")]
    lost = missing(trace, wanted)
    if lost:
        return MessageView(MOE, missing_message("The mixture of experts", lost))
    probs_name, chosen_name, weights_name, out_name = wanted
    probs = array(trace, probs_name)  # [T, E]
    chosen_ids = np.asarray(trace.numpy(chosen_name), dtype=np.int64)  # [T, k]
    mask, weights = chosen_cells(chosen_ids, array(trace, weights_name), probs.shape[1])  # [T, E] each
    labels = row_labels(trace, layer_side(layer), probs.shape[0], vocab)
    experts = [str(e) for e in range(probs.shape[1])]  # short: they stand upright, the map keeps its height
    k = chosen_ids.shape[1]
    router = matrix_view(
        probs_name,
        probs,
        labels,
        f"router: softmax(x W_router), top {k} outlined",
        cols=experts,
        symmetric=False,
        levels=(0.0, 1.0),
        axes=("token", "expert"),
    )
    marks = [(int(r), int(e), f"● {weights[r, e]:.0%}") for r, e in zip(*np.nonzero(mask), strict=True)]
    load = [int(n) for n in mask.sum(axis=0)]
    busiest = int(np.argmax(load))
    return MoEView(
        router=router,
        chosen=mask,
        weights=weights,
        marks=marks,
        out=matrix_view(out_name, array(trace, out_name), labels, "output: Σ weight × expert(x)"),
        load=load,
        k=k,
        summary=(
            f"Each token runs {k} of {probs.shape[1]} experts; expert {busiest} serves the most tokens "
            f"({load[busiest]} of {probs.shape[0]}). Tokens per expert: {', '.join(map(str, load))}."
        ),
        note=(
            f"{layer_name(layer)}: the router scores every expert for each token; only the top {k} run, and "
            "their outputs are mixed with the chosen probabilities divided by their sum (the outlined cells; "
            "each row's ● weights add up to 100%). The other experts' weights are never computed for that token."
        ),
    )
