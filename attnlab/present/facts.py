"""Facts read off a Trace for the panels and the explanations (Qt-free): names, token labels, toggles.

How a run was made (norm placement, residuals, scaling, temperature) is read from the RunOptions the trace
carries (`trace.options`, resolved by the engine), never inferred back from the numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names, option_rules
from attnlab.engine.tokenizer import SPECIALS
from attnlab.present import words
from attnlab.present.stage_types import FIXED_SCORE_RANGE, SCORE_KINDS

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

SPECIAL_TOKENS = SPECIALS
PREDICTS = " → "  # joins a decoder row's input token and the token it predicts: "<s> → le"


def missing(trace: Trace, wanted: Sequence[str]) -> list[str]:
    """The names this panel needs that the trace does not hold."""
    return [n for n in wanted if n not in trace]


def missing_message(what: str, wanted: Sequence[str]) -> str:
    shown = ", ".join(wanted[:3]) + (" …" if len(wanted) > 3 else "")
    return (
        f"{what} is not in this run ({shown} was not recorded). It may be switched off, not part of "
        f"this model, or the run was made on the fast path without recording."
    )


def array(trace: Trace, name: str) -> np.ndarray:
    """The trace entry as a float32 numpy array (no copy when it already is one)."""
    return np.asarray(trace.numpy(name), dtype=np.float32)


def tokens(trace: Trace, side: str, n: int) -> list[str] | None:
    """Token strings of `side` ("src"/"tgt") when there are exactly `n` of them, else None (numbers shown)."""
    toks = trace.get(names.side_entry(side, "tokens"))
    if toks is None or len(toks) != n:
        return None
    return [str(t) for t in toks]


def site_sides(site: str) -> tuple[str, str]:
    """(query side, key side) of an attention site: enc.* reads src both ways, dec.self tgt both ways,
    dec.cross queries from tgt and keys/values from src."""
    stack, _layer, kind = names.split_site(site)
    q_side = names.stack_side(stack)
    k_side = names.stack_side("enc" if kind == "cross" else stack)
    return q_side, k_side


def site_name(site: str) -> str:
    """'dec.1.cross' -> 'decoder layer 2 cross-attention'."""
    return words.site_full_words(site)


def layer_name(layer: str) -> str:
    """'enc.0' -> 'encoder layer 1'."""
    return words.layer_words_inline(layer)


def side_name(side: str) -> str:
    """'src' -> 'source', 'tgt' -> 'decoder input'."""
    return words.word(f"{side}.side")


def layer_side(layer: str) -> str:
    """Which token side a layer's rows belong to: encoder layers read src, decoder layers tgt."""
    return names.stack_side(names.stack_of(layer))


def has_cross(trace: Trace, layer: str) -> bool:
    """Whether this layer of the run has a cross-attention sub-layer."""
    return names.site_entry(names.site(layer, "cross"), "out") in trace


def sublayer_kind(trace: Trace, layer: str, n: int) -> str:
    """What add & norm n of `layer` wraps: 'self', 'cross' or 'ffn'."""
    return names.sublayer_kind(names.stack_of(layer), n, has_cross(trace, layer))


def sublayer_output(trace: Trace, layer: str, n: int) -> str:
    """Name of the output of the sub-layer wrapped by add & norm n of `layer` (attention or FFN)."""
    return names.sublayer_out(layer, n, has_cross(trace, layer))


def score_levels(trace: Trace, site: str, head: int, mode: str) -> tuple[float, float] | None:
    """Colour levels of a score-like map (scores, ÷√dₖ, masked) of `head` at `site`: one symmetric ±max|x| over
    the finite values of all three maps with mode "shared" (so dividing by √dₖ visibly pales the map), a fixed
    ±FIXED_SCORE_RANGE with "fixed", None (each map autoscales) with "panel"."""
    if mode == "fixed":
        return (-FIXED_SCORE_RANGE, FIXED_SCORE_RANGE)
    if mode != "shared":
        return None
    peak = 0.0
    for kind in SCORE_KINDS:
        name = names.site_entry(site, kind)
        if name in trace:
            values = np.asarray(trace.numpy(name))[head]  # [Tq, Tk]
            finite = values[np.isfinite(values)]
            peak = max(peak, float(np.abs(finite).max()) if finite.size else 0.0)
    return (-peak, peak) if peak > 0 else None


# ---- how the run was made: read from trace.options (resolved by the engine) ---------------------------------
def norm_placement(trace: Trace) -> str:
    """'pre' or 'post': where this run placed its LayerNorms (`options.norm_first`); 'output' where each norm
    sits on its sub-layer's output, x + norm(F(x)) (`options.output_norm`, OLMo-2)."""
    if trace.options.output_norm:  # the trained norm on the output, alone or after a pre-norm
        return "sandwich" if trace.config.sublayer_norm == "sandwich" else "output"
    return "pre" if trace.options.norm_first else "post"


def residual_on(trace: Trace) -> bool:
    """Whether this run kept the x + sublayer(x) connections."""
    return trace.options.residual


def scaling_on(trace: Trace) -> bool:
    """Whether this run divided QKᵀ by √dₖ."""
    return trace.options.scale


def run_temperature(trace: Trace) -> float:
    """The output softmax temperature of this run."""
    return float(trace.options.temperature)


# ---- how far the run is from how the model was trained ------------------------------------------------------
UNTRAINED_LEAD = "Untrained configuration — the outputs now show a model run differently from how it was trained:"
FINAL_NORM_REMEDY = (
    "Remedy: tick “Final LayerNorm” in the toggles to add a parameter-free LayerNorm (γ = 1, β = 0) "
    "at the end of each stack, as pre-norm models have."
)
RESET_REMEDY = "“Reset all toggles” returns to the trained model."


def final_norm_on(trace: Trace) -> bool:
    """Whether this run normalised each stack's output (a trained final norm or the parameter-free one)."""
    options, config = trace.options, trace.config
    if options.final_norm is not None:
        return bool(options.final_norm)
    return bool(config.final_norm)


def _peak_logit(trace: Trace) -> float | None:
    """The largest |logit| of the run, found where the logits live: no [T, V] copy (4 GiB in float32 for a
    128k vocabulary at 8,192 tokens) and no |logits| temporary."""
    if names.LOGITS not in trace:
        return None
    low, high = trace.device_value(names.LOGITS).aminmax()
    return max(-float(low), float(high))


def untrained_reasons(trace: Trace) -> list[str]:
    """Why this run's outputs are not the trained model's (empty when they are): each toggle that moves the
    computation away from the one the weights were fitted to, in words a person reads on the banner (the
    `departs` of each spec in the option table)."""
    config, options = trace.config, trace.options
    return option_rules.departures(config, options, lambda: _peak_logit(trace), lambda: int(trace.info.get("pads", 0)))


def untrained_remedies(trace: Trace) -> list[str]:
    """What undoes the damage: the final-LayerNorm toggle where it applies, else resetting the toggles."""
    if not untrained_reasons(trace):
        return []
    config = trace.config
    remedies = []
    if norm_placement(trace) == "pre" and not config.norm_first and not final_norm_on(trace):
        remedies.append(FINAL_NORM_REMEDY)
    return remedies + [RESET_REMEDY]


def untrained_banner(trace: Trace) -> str:
    """The banner text for a run away from the trained model ('' when the run is as trained)."""
    reasons = untrained_reasons(trace)
    if not reasons:
        return ""
    return " ".join([UNTRAINED_LEAD, "; ".join(reasons) + ".", *untrained_remedies(trace)])


# ---- what each decoder position predicts ----------------------------------------------------------------------
def predicts_next(trace: Trace, side: str) -> bool:
    """Whether the rows of `side` are next-token predictions: the decoder side of a model with a decoder (an
    encoder-only model predicts each position in place)."""
    return side == "tgt" and names.side_entry("tgt", "tokens") in trace


def predicted_labels(trace: Trace, labels: list[str], vocab: Callable[[int], str] | None = None) -> list[str]:
    """Decoder row labels as "input → predicted": position t is labelled with its input token and the token it
    must predict, the next decoder input (teacher forcing) for every position but the last real one, which
    shows the model's own most likely token (`vocab` names the id; "?" without one). <pad> rows stay as they are.
    ['<s>', 'le', 'chat'] -> ['<s> → le', 'le → chat', 'chat → noir'] when the model's guess after 'chat' is 'noir'."""
    n = len(labels)
    real = n
    while real and labels[real - 1] == "<pad>":
        real -= 1
    out = list(labels)
    for t in range(real - 1):
        out[t] = f"{labels[t]}{PREDICTS}{labels[t + 1]}"
    if real:
        guess = "?"
        if vocab is not None and names.LOGITS in trace:
            logits = np.asarray(trace.read(names.LOGITS, real - 1))  # [V]: the most likely token, as in probs
            guess = vocab(int(logits.argmax()))
        out[real - 1] = f"{labels[real - 1]}{PREDICTS}{guess}"
    return out


def row_labels(trace: Trace, side: str, n: int, vocab: Callable[[int], str] | None = None) -> list[str] | None:
    """The labels of `side`'s `n` rows on a stage that concerns prediction (attention, add & norm, FFN, the
    output): decoder rows as "input → predicted" (`predicted_labels`), other rows as their tokens; None when
    the trace does not hold `n` tokens for that side. The one rule every such stage uses."""
    labels = tokens(trace, side, n)
    if labels is not None and predicts_next(trace, side):
        labels = predicted_labels(trace, labels, vocab)
    return labels
