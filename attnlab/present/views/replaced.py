"""ELECTRA's discriminator output as plain data: for every token, P(replaced) = σ(z) (kind "probs") or its logit
z (kind "logits"), most suspicious first, drawn by the output panel's bars. The engine keeps the logits as [0, z]
per token (engine/encoder_parts.ReplacedHead), so the run's softmax column 1 is σ(z / T)."""

from __future__ import annotations

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.facts import array, run_temperature
from attnlab.present.labels import printable_label
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.output_bars import OutputView, top_k, value_text

REPLACED = 1  # the column of the [0, z] logits that is z ("replaced"); column 0 is "original"


def replaced_view(trace: Trace, stage: Stage, display: ViewState) -> OutputView:
    kind = stage.kind
    per_token = array(trace, kind)[:, REPLACED]  # [T]: z, or P(replaced) = σ(z / T)
    toks = [str(t) for t in trace.get(names.side_entry("src", "tokens")) or []]
    labels = [f"{i}: {printable_label(toks[i]) if i < len(toks) else '?'}" for i in range(per_token.shape[0])]
    order = top_k(per_token, display.top_k)  # the most suspicious tokens first
    values = per_token[order]  # [k]
    shown = [labels[int(i)] for i in order]
    what = "P(replaced) = σ(z / T)" if kind == names.PROBS else "replaced-token logit z"
    return OutputView(
        kind=kind,
        position=0,
        positions=["every token"],
        ids=[int(i) for i in order],
        labels=shown,
        values=np.ascontiguousarray(values, dtype=np.float32),
        value_texts=[value_text(float(v), kind) for v in values],
        row=per_token,
        temperature=run_temperature(trace),
        title=f"Was each token replaced? {what}, the {len(order)} most suspicious of {per_token.shape[0]}",
        note=(
            "ELECTRA's discriminator scores every token at once: one logit z per token, and P(replaced) = σ(z). "
            f"The orange bar, “{shown[0]}”, is the token it most suspects; it predicts no word."
        ),
        ablation="",
        change=None,
    )
