"""The explanation of the logit lens stage (engine/logit_lens.py): the formula and what the picture says. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.engine.logit_lens import lens_norm
from attnlab.present import formulas as fm
from attnlab.present.explain_page import DM, page, shape_of
from attnlab.present.stage_types import Stage
from attnlab.present.views.lens import norm_sentence

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def lens_formula(trace: Trace) -> str:
    """p<sub>l</sub> = softmax(norm(h<sub>l</sub>) W + b), with the run's own final norm and output projection."""
    config = trace.config
    norm = lens_norm(config.final_norm, trace.options.final_norm)
    inner = "h<sub>l</sub>"
    if norm == "trained":
        inner = f"{fm.norm_word(config)}<sub>final</sub>(h<sub>l</sub>)"
    elif norm == "plain":
        inner = "LN(h<sub>l</sub>)"
    if config.output_head:
        inner = f"head({inner})"
    w = "E<sup>T</sup>" if config.tie_output else "W<sub>out</sub>"
    bias = " + b" if config.has_bias("logits") else ""
    return f"p<sub>l</sub> = softmax({inner} {w}{bias}), &nbsp; l = 0 (embeddings) … L"


def lens_page(stage: Stage, trace: Trace) -> str:
    shape = shape_of(trace, names.LENS_PROBS) or (0, 0, 0)
    rows, t, k = shape if len(shape) == 3 else (0, 0, 0)
    return page(
        "Logit lens",
        lens_formula(trace),
        [
            f"h<sub>l</sub> is the residual stream after layer l (l = 0: the layer input, embeddings and "
            f"positions), {DM} numbers per position. The lens reads it as if the model stopped there: it applies "
            "what comes after the last layer, and softmax.",
            norm_sentence(trace),
            "Each cell shows the most likely next token at that depth and position, coloured by its probability; "
            "the last row is exactly the model's own prediction (the output stage at temperature 1).",
            "Where a row first agrees with the last one tells how early the model settles on its answer; "
            "early layers' guesses are often unrelated, since their residual stream is not yet shaped for the "
            "output matrix.",
        ],
        f"[{rows} residual streams × {t} positions × top {k}] (computed one layer at a time; only the top {k} "
        "are kept).",
    )
