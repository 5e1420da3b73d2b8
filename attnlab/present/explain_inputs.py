"""Explanations of the input stages: tokenization, the token embedding, the positional encoding (sinusoidal,
learned, rotary or none) and the layer input they add up to. Qt-free; `explain.explanation_html` dispatches here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.present import formulas as fm
from attnlab.present.explain_factorised import factorised_sentences
from attnlab.present.explain_page import DM, model_note, page, shape_of, token_word, tokens_of
from attnlab.present.seq2seq_tokens import special_token_sentences
from attnlab.present.shift import decoder_input_role
from attnlab.present.stage_types import Stage
from attnlab.present.token_roles import count_text, specials_sentence

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace


def inputs_explanation(stage: Stage, trace: Trace) -> str:
    """The page of an input stage; the embedding and layer-input pages add what an imported model adds around
    its embeddings."""
    notes = input_sentences(trace, stage.side) if stage.side and stage.kind in ("embed", "input") else []
    return inputs_page(stage, trace) + model_note(notes)


def inputs_page(stage: Stage, trace: Trace) -> str:
    """The page of an input stage: tokens, token embedding, positional encoding, or the layer input."""
    side = stage.side or "src"
    toks = tokens_of(trace, side)
    n = len(toks)
    d = (shape_of(trace, names.side_entry(side, "embed")) or (n, 0))[-1]
    if stage.kind == "tokens":
        return _tokens_page(trace, side, toks)
    if stage.kind == "embed":
        return _embed_page(trace, n, d)
    pos = shape_of(trace, names.side_entry(side, "pos"))
    if stage.kind == "pos":
        return _positions(trace, pos)
    return _layer_input_page(trace, pos, n, d)


def _tokens_page(trace: Trace, side: str, toks: list[str]) -> str:
    n = len(toks)
    specials = specials_sentence(trace, side)
    role = decoder_input_role(trace) if side == "tgt" else ""
    if side == "tgt" and names.side_entry("src", "tokens") in trace:
        specials = ""  # the decoder input's start token is said by the shift
    pad = (
        "&lt;pad&gt; tokens only fill the sequence up to a fixed length; the padding mask hides them from attention."
        if "<pad>" in toks
        else ""
    )
    return page(
        "Tokenization",
        "text → pieces → ids",
        [
            "A tokenizer cuts the text into pieces from a fixed vocabulary and replaces each piece by its "
            "integer id; the network never sees letters, only these ids.",
            specials,
            role,
            *special_token_sentences(side, toks, names.side_entry("src", "tokens") in trace),
            pad,
            "Each id picks one row of the embedding table in the next step.",
        ],
        f"{n} {token_word(side)} tokens{count_text(trace, side, toks)} → ids of shape [{n}].",
    )


def _embed_page(trace: Trace, n: int, d: int) -> str:
    scaled = trace.config.scale_embedding
    return page(
        "Token embedding",
        fm.embed_formula(trace.config),
        [
            f"The embedding table E holds one learned vector of {DM} numbers per vocabulary "
            "entry, and looking up a token is just reading the row with its id.",
            "The lookup ignores where the token stands: two copies of a repeated word get identical rows.",
            f"This model multiplies the rows by √{DM} so they are not drowned by the positional encoding added next."
            if scaled
            else f"This model uses the rows as they are (no × √{DM}).",
        ],
        f"{n} tokens × {DM} = {d} → [{n}, {d}].",
    )


def _layer_input_page(trace: Trace, pos: tuple[int, ...] | None, n: int, d: int) -> str:
    added = "embedding + positional encoding" if pos is not None else "the embedding alone (no PE table)"
    return page(
        "Layer input",
        fm.input_formula(trace.config, trace.options),
        [
            f"The two vectors are added, not concatenated, so the width stays {DM} and every later "
            "layer sees content and position mixed in the same numbers.",
            ""
            if pos is not None
            else "Here nothing is added, so reordering the tokens would only reorder the rows of X.",
            "This matrix X is what the first layer's attention reads.",
        ],
        f"X = {added}: [{n}, {d}].",
    )


BAG_OF_WORDS = (
    "Attention itself compares tokens by content only, so without position a sentence is a bag of "
    "words: “dog bites man” and “man bites dog” look the same."
)


def _positions(trace: Trace, pos: tuple[int, ...] | None) -> str:
    """The positional-encoding stage, written for the kind this run uses (sinusoidal, learned, rotary, none)."""
    kind = fm.pe_kind(trace.config, trace.options)
    if kind == "rotary":
        return page(
            "Positional encoding: rotary (nothing added here)",
            fm.pe_formula(trace.config, trace.options),
            [
                "This model adds no position vector to the embedding: inside every self-attention it rotates each "
                "query and key by an angle proportional to its position, so the score q · k depends on how far "
                "apart the two tokens are."
            ],
        )
    if kind == "none" or pos is None:
        off = not trace.options.positional
        return page(
            "Positional encoding (not added)",
            "",
            [
                "Positional encoding is switched off in this run." if off else "This model has no positional encoding.",
                BAG_OF_WORDS,
            ],
        )
    shapes = f"{'PE' if kind == 'sinusoidal' else 'P'} for {pos[0]} positions × {DM} = {pos[1]} → [{pos[0]}, {pos[1]}]."
    lead = (
        "Attention has no built-in sense of order, so every position gets a vector of its own that is added "
        "to the token's embedding."
    )
    if kind == "learned":
        return page(
            "Positional encoding: learned",
            fm.pe_formula(trace.config, trace.options),
            [
                lead,
                "In this model the position vectors are a trained table, one row per position, learned along "
                "with everything else; it has no formula and no row past the longest position seen in training "
                f"({trace.config.max_len if trace.config else '?'} here).",
            ],
            shapes,
        )
    return page(
        "Positional encoding: sinusoidal",
        fm.pe_formula(trace.config, trace.options),
        [
            lead,
            "Each pair of dimensions is one wave; the wavelengths grow geometrically from 2π up to 10000·2π, "
            "so early dimensions change quickly from one position to the next and late ones slowly.",
            "Because sin(a + b) and cos(a + b) are linear in sin a and cos a, moving k places is the same rotation "
            "everywhere, which makes relative offsets easy to read. Nothing here is learned.",
        ],
        shapes,
    )


# ---- what imported models add ------------------------------------------------------------------------------------
def input_sentences(trace: Trace, side: str) -> list[str]:
    """What an imported model adds around its embeddings, one sentence each (empty for the classroom ones)."""
    cfg = trace.config
    out = []
    if cfg.scale_embedding:
        out.append(
            f"Token embeddings are multiplied by √{DM} = {cfg.d_model**0.5:.1f} before positions are "
            "added, so they are not drowned by the position vectors."
        )
    if names.side_entry(side, names.TYPE) in trace:
        out.append(
            "A token-type (segment) embedding is added too: it tells sentence A from sentence B; every "
            "token of a single sentence has type 0."
        )
    if cfg.positional == "learned" and cfg.pos_offset:
        out.append(
            f"Learned positions start at row {cfg.pos_offset} of the table (position p reads row "
            f"p + {cfg.pos_offset}), a convention from RoBERTa's padding index."
        )
    if cfg.positional == "rotary":
        out.append(
            "No position vector is added here: this model rotates Q and K inside every attention "
            "(rotary position encoding)."
        )
    if names.norm_entry(names.embed_norm(side), "out") in trace:
        out.append("The sum then goes through an embedding LayerNorm before the first layer.")
    return out + factorised_sentences(trace, side)
