"""The explanations of the output steps (kinds names.LOGITS and names.PROBS, present/kinds.py): the logits over
the vocabulary and the next-token probabilities, or ELECTRA's replaced-token logit and P(replaced) per token.
Their views are views/output.py and views/replaced.py. Qt-free; every number is read from the trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import formulas as fm
from attnlab.present.explain_factorised import head_sentences
from attnlab.present.explain_layers import ACTIVATION_WORDS
from attnlab.present.explain_page import DM, model_note, page, shape_of
from attnlab.present.stage_types import Stage
from attnlab.present.unsure import unsure_sentence

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def output_explanation(stage: Stage, trace: Trace) -> str:
    """The page of an output step: ELECTRA's replaced-token output, or the vocabulary's."""
    if trace.config.replaced_head:
        return replaced_page(stage, trace)
    return _vocabulary_page(stage, trace) + model_note(output_sentences(trace))


def output_sentences(trace: Trace) -> list[str]:
    cfg = trace.config
    out = []
    if names.head_entry("pre") in trace or cfg.output_head:
        out.append(
            "Before the vocabulary projection, a masked-LM head transforms each vector: a dense layer, "
            f"{ACTIVATION_WORDS.get(cfg.activation, cfg.activation)}, then a LayerNorm."
        )
    if cfg.has_bias("logits"):
        out.append("A learned bias b<sub>logits</sub> (one number per vocabulary entry) is added to the logits.")
    if cfg.arch == "encoder-only":
        out.append("Each [MASK] position shows the model's guess for the hidden word.")
    return out + head_sentences(trace)


def _vocabulary_page(stage: Stage, trace: Trace) -> str:
    shape = shape_of(trace, names.LOGITS) or shape_of(trace, names.PROBS) or (0, 0)
    t, v = shape[0], shape[1] if len(shape) > 1 else 0
    decoder = names.side_entry("tgt", "tokens") in trace
    pos_word = (
        "At decoder position t the distribution is the model's guess for token t + 1; greedy "
        "generation appends the most likely token and runs again (autoregressive decoding)."
        if decoder
        else "An encoder-only model predicts a token at every position (e.g. to fill "
        "in a masked word), so each position has its own distribution."
    )
    if stage.kind == names.LOGITS:
        return page(
            "Output logits",
            fm.logits_formula(trace.config),
            [
                "The final vector of each position is multiplied by an output matrix with one column per "
                "vocabulary entry; many models reuse the embedding table for it (tied weights).",
                "A logit is an unnormalised score: only differences between logits matter.",
                pos_word,
            ],
            f"[{t} positions × {v} vocabulary entries].",
        )
    return page(
        "Next-token probabilities",
        "p = softmax(logits / T)",
        [
            "softmax turns the logits of a position into probabilities that sum to 1.",
            "The temperature T reshapes them: T &lt; 1 sharpens the distribution toward the top token, T &gt; 1 "
            "flattens it.",
            "Sampling (in the toggles) draws the next token instead of taking the top one, as transformers' "
            "generate() does: after T, top-k keeps the k most probable tokens and top-p the fewest whose "
            "probabilities reach p; what is left is renormalised and one token drawn with the seed, so the same "
            "seed gives the same tokens. The bars then show that renormalised distribution, a dashed line under "
            "the last kept token.",
            pos_word,
            unsure_sentence(trace),
        ],
        f"[{t} × {v}], each row sums to 1.",
    )


def replaced_page(stage: Stage, trace: Trace) -> str:
    """ELECTRA's discriminator output: one logit z per token, P(replaced) = sigmoid(z)."""
    shape = shape_of(trace, names.LOGITS) or (0, 2)
    act = trace.config.activation
    lead = (
        "ELECTRA's discriminator was trained to tell, for every token, whether it is the original or was "
        "replaced by a small generator network; it predicts no word."
    )
    head = (
        f"Its head is h → dense ({DM} → {DM}) → {act} → dense ({DM} → 1): one number z per token. attnlab keeps "
        "the logits as the pair [0, z], so their softmax is exactly [1 − σ(z), σ(z)]."
    )
    if stage.kind == names.LOGITS:
        return page(
            "Replaced-token logits",
            "z<sub>t</sub> = w<sub>2</sub> · act(W<sub>1</sub> h<sub>t</sub> + b<sub>1</sub>) + b<sub>2</sub>",
            [lead, head, "z &gt; 0 leans to “replaced”, z &lt; 0 to “original”; the bars show z per token."],
            f"[{shape[0]} tokens × 1 logit] (kept as [{shape[0]} × 2] = [0, z]).",
        )
    return page(
        "Replaced-token probabilities",
        "P(replaced)<sub>t</sub> = σ(z<sub>t</sub> / T) = 1 / (1 + e<sup>−z<sub>t</sub>/T</sup>)",
        [
            lead,
            head,
            "The bars show P(replaced) for each token, most suspicious first; on a text nobody tampered with, "
            "a good discriminator keeps them all low.",
        ],
        f"[{shape[0]} tokens], each a probability between 0 and 1.",
    )
