"""The explanation of a sparse mixture-of-experts FFN (Mixtral; engine/moe.py): its formula, as transformers'
MixtralSparseMoeBlock computes it, and this run's router numbers. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import formulas as fm
from attnlab.present.explain_page import DFF, DM, page, shape_of
from attnlab.present.facts import layer_name
from attnlab.present.stage_types import Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def moe_formula(trace: Trace) -> str:
    """The router, the top-k choice, the renormalised weights and the weighted sum of the chosen experts."""
    config = trace.config
    act = fm.ACT_SYMBOL.get(config.activation, config.activation)
    k, e = config.experts_per_token, config.n_experts
    return (
        "p = softmax(x W<sub>router</sub>) &nbsp; (one probability per expert, "
        f"E = {e})<br>S = the {k} experts of largest p, &nbsp; w<sub>i</sub> = p<sub>i</sub> / Σ<sub>j∈S</sub> "
        "p<sub>j</sub> &nbsp; (i ∈ S)<br>"
        f"MoE(x) = Σ<sub>i∈S</sub> w<sub>i</sub> · ({act}(x W<sub>gate,i</sub>) ⊙ x W<sub>up,i</sub>) "
        "W<sub>down,i</sub>"
    )


def moe_page(stage: Stage, trace: Trace) -> str:
    layer = stage.layer or ""
    t, e = shape_of(trace, names.ffn_entry(layer, "router_probs")) or (0, 0)
    d = (shape_of(trace, names.ffn_entry(layer, "out")) or (0, 0))[-1]
    k = trace.config.experts_per_token
    return page(
        f"Mixture of experts · {layer_name(layer)}",
        moe_formula(trace),
        [
            f"Instead of one feed-forward network, this layer has {e} experts, each a gated network of its own "
            f"({DM} = {d} → {DFF} = {trace.config.d_ff} → {d}).",
            f"A linear router scores the experts for each token; softmax turns the scores into probabilities, "
            f"and only the {k} most probable experts run on that token. Their probabilities are divided by "
            "their sum, so the chosen weights add up to 1, and the token's output is the weighted sum of the "
            "chosen experts' outputs.",
            f"So each token pays for {k} experts' arithmetic while the layer holds {e} experts' weights. "
            "Different tokens of one sentence may go to different experts; the choice is made token by token.",
        ],
        f"router [{t} × {e}] → top {k} per token → [{t} × {d}].",
    )
