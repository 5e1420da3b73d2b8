"""The pages of what the BERT-like encoders beyond BERT add (ALBERT, ELECTRA): the factorised embedding's
projection, one layer's weights shared by every layer, and ELECTRA's replaced-token output. Qt-free; every number
is read from the trace and its config."""

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


def shared_layers_label(n_layers: int) -> str:
    """The schematic's line under the stack's header of a model whose layers share their weights."""
    return f"layers 1–{n_layers} share one set of weights"


def shared_layers_sentence(trace: Trace) -> str:
    n = trace.config.n_encoder_layers
    return (
        f"Layers 1–{n} share one set of weights: every layer runs the very same W<sub>Q</sub>, W<sub>K</sub>, "
        "W<sub>V</sub>, W<sub>O</sub>, feed-forward and LayerNorms (ALBERT's cross-layer sharing), so only "
        "the vectors that flow in differ from layer to layer."
    )


def shared_layers_note(stage: Stage, trace: Trace) -> str:
    """A paragraph appended to every layer stage's page of a model whose layers share their weights."""
    if not trace.config.share_layers or not (stage.site or stage.layer):
        return ""
    return f"\n<p><b>This model:</b> {shared_layers_sentence(trace)}</p>"


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


def bertish_explanation(stage: Stage, trace: Trace) -> str | None:
    """The page of a stage only these models have, or None."""
    if stage.kind == names.EMBED_PROJ:
        return factorised_page(stage, trace)
    if stage.kind in (names.LOGITS, names.PROBS) and trace.config.replaced_head:
        return replaced_page(stage, trace)
    return None
