"""The position-bias stages of a site (engine/position_bias.py): the bias B of the chosen head, then the scaled
scores plus B. Their titles, formulas and pages; Qt-free.

BLOOM's ALiBi bias is B[h, i, j] = m_h · j. The paper writes −m_h · (i − j) = m_h · j − m_h · i: the two differ
by m_h · i, one number for the whole row i, and softmax(x + c) = softmax(x), so the weights are the same. The
formula on the page says both and which one the panel draws.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present.explain_page import DK, page, shape_of

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace

STEPS = (("bias", "+ position bias B"), ("biased", "scaled + bias"))  # after ÷√dₖ, before the mask
TITLES = {
    "alibi": {"bias": "ALiBi bias B = m_h · j", "biased": "+ ALiBi bias"},
    "t5": {"bias": "relative position bias B = b_h[bucket(j − i)]", "biased": "+ relative position bias"},
}


def has_bias(trace: Trace, site: str) -> bool:
    """Whether the site has the bias stages: the model adds a position bias to its self-attention (the stages
    stay while positions are switched off, and their panels say so: the stage list does not shift)."""
    biased_site = trace.config.position_bias != "none" and names.split_site(site)[2] == "self"
    return biased_site or names.bias_entries(site)[0] in trace


def stage_titles(config: ModelConfig, scale: bool) -> list[tuple[str, str]]:
    """(kind, title) of the two stages, in order."""
    words = TITLES.get(config.position_bias, {})
    titles = [(kind, words.get(kind, title)) for kind, title in STEPS]
    if not scale:  # the second map adds B to the raw scores
        titles[1] = ("biased", titles[1][1] + (" (on QKᵀ)" if not config.trained_scale else " (on QKᵀ: ÷√dₖ off)"))
    return titles


def bias_formula(config: ModelConfig, n_heads: int, stack: str = "dec") -> str:
    """B of the model, with its slopes (ALiBi) or its bucket rule (T5's relative buckets) for `stack`."""
    if config.position_bias == "t5":
        return bucket_formula(config, stack == "enc")
    if config.position_bias != "alibi":
        return ""
    return (
        "B<sub>h,i,j</sub> = m<sub>h</sub> · j &nbsp; (= −m<sub>h</sub>(i − j) + m<sub>h</sub> i: "
        "the m<sub>h</sub> i is the same for every key of row i, and softmax ignores it)"
        f"<br>m<sub>h</sub> = {slopes_text(n_heads)}"
    )


def bucket_formula(config: ModelConfig, bidirectional: bool) -> str:
    """T5's B = b_h[bucket(j − i)] and the bucket rule with the model's numbers (as
    engine/position_bias.relative_bucket computes it)."""
    n = config.relative_buckets // 2 if bidirectional else config.relative_buckets
    exact = n // 2
    side = (
        f"keys after the query (j &gt; i) take buckets {n} … {2 * n - 1}, keys before it 0 … {n - 1}; then d = |j − i|"
        if bidirectional
        else "keys after the query all fall in bucket 0 (the causal mask blocks them); d = max(i − j, 0)"
    )
    return (
        "B<sub>h,i,j</sub> = b<sub>h</sub>[bucket(j − i)] &nbsp; (b: a learned table, one number per head and "
        f"bucket)<br>bucket: {side}; d &lt; {exact}: one bucket per distance; {exact} ≤ d: "
        f"{exact} + ⌊ln(d / {exact}) / ln({config.relative_max_distance} / {exact}) · {n - exact}⌋, "
        f"at most {n - 1} (every d ≥ {config.relative_max_distance} shares the last)"
    )


def slopes_text(n_heads: int) -> str:
    """'2^-8/P·k' written out: the slopes of `n_heads` heads as BLOOM computes them (engine/position_bias.py)."""
    from attnlab.engine.position_bias import alibi_slopes  # torch: only when a page is written

    P = 2 ** math.floor(math.log2(n_heads))
    values = ", ".join(f"{m:.4g}" for m in alibi_slopes(n_heads).tolist())
    rule = f"2<sup>−{8 / P:g}·k</sup>, k = 1 … {P}"
    if P != n_heads:
        rule += f"; then 2<sup>−{4 / P:g}·k</sup>, k = 1, 3, 5, … for the other {n_heads - P}"
    return f"{rule} &nbsp; ({values})"


def biased_formula(scale: bool, trained_scale: bool = True) -> str:
    scaled = f"Q Kᵀ / √{DK}" if scale else "Q Kᵀ (÷√d<sub>k</sub> switched off)"
    if not trained_scale:  # T5
        scaled = "Q Kᵀ (no ÷√d<sub>k</sub>: the model is trained without it)"
    return f"S″ = {scaled} + B"


def bias_page(kind: str, trace: Trace, site: str, where: str) -> str:
    """The page of the bias stage or of the scaled + bias stage."""
    config = trace.config
    shape = shape_of(trace, names.bias_entries(site)[0]) or (0, 0, 0)  # [H, Tq, Tk]
    shapes = f"B: {shape[0]} heads × {shape[1]} × {shape[2] if len(shape) > 2 else 0}."
    if kind == "bias":
        formula = bias_formula(config, shape[0], names.stack_of(site))
        return page(f"Position bias · {where}", formula, BIAS_SENTENCES.get(config.position_bias, []), shapes)
    return page(
        f"Scores plus position bias · {where}",
        biased_formula(trace.options.scale, config.trained_scale),
        [
            "Each head's bias is added to its scaled scores before the mask and the softmax, so the weights "
            "depend on where the keys are as well as on what they say.",
        ],
        shapes,
    )


BIAS_SENTENCES = {
    "alibi": [
        "This model adds no position vector to its tokens. Instead every head adds a bias to its "
        "scores that grows with the key's position, with its own slope m_h: a head with a large "
        "slope favours recent keys strongly, one with a small slope looks far back.",
        "Written as the paper does, −m_h(i − j) punishes a key by its distance from the query; "
        "BLOOM adds m_h · j instead, which shifts each row by m_h · i and leaves the weights unchanged. "
        "The map shows BLOOM's numbers.",
        "The same B serves every layer; switching positions off removes it (a bag of words).",
    ],
    "t5": [
        "Every head adds to its scores a learned number that depends only on how far the key is from the "
        "query (j − i), read from a small table: nearby distances each have their own bucket, far ones "
        "share logarithmically wider buckets.",
        "The left map shows each cell's bucket, the right one the chosen head's number for it. The bias "
        "is computed once, in the first layer, and added in every layer of the stack; switching positions "
        "off removes it.",
    ],
}


def with_bias_steps(trace: Trace, site: str, steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The site's (kind, title) steps with the two bias stages after ÷√dₖ (and its "why"), when the run added
    a position bias here; the steps unchanged otherwise."""
    if not has_bias(trace, site):
        return steps
    at = next(i for i, (kind, _) in enumerate(steps) if kind == "mask")
    return steps[:at] + stage_titles(trace.config, trace.options.scale) + steps[at:]
