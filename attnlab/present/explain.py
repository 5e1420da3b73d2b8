"""Short explanations of each stage: what it computes, its formula, and the live shapes of this run.

`explanation_html(stage, trace)` returns a small HTML fragment (a QLabel / QTextBrowser renders it). Every
number in it is read from the trace, so flipping a toggle (heads, scaling, masks, norm placement, positional
encoding, residuals) changes the text along with the pictures; how the run was made is read from the
RunOptions it carries (see `attnlab.present.facts`). Qt-free.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present import explain_imported
from attnlab.present import formulas as fm
from attnlab.present.facts import (
    layer_name,
    layer_side,
    norm_placement,
    residual_on,
    scaling_on,
    site_name,
    site_sides,
    sublayer_kind,
)
from attnlab.present.stages import NORM_COMPARE, Stage

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

DM, DK, DFF = "d<sub>model</sub>", "d<sub>k</sub>", "d<sub>ff</sub>"
FORMULAS = {  # the formulas that do not depend on the model; the others come from present.formulas
    "scores": ("S = Q Kᵀ, &nbsp; S<sub>ij</sub> = q<sub>i</sub> · k<sub>j</sub>"),
    "context": (
        "head<sub>h</sub> = A<sub>h</sub> V<sub>h</sub>, &nbsp; "
        "z<sub>i</sub> = Σ<sub>j</sub> A<sub>ij</sub> v<sub>j</sub>"
    ),
}


def _token_word(side: str) -> str:
    """'src' -> 'source' (as in "7 source tokens")."""
    return names.word(f"{side}.short")


def _formula(text: str) -> str:
    return f"<p style='font-size:large; font-family:serif'>{text}</p>"


def _shape(trace: Trace, name: str) -> tuple[int, ...] | None:
    value = trace.get(name)
    if value is None:
        return None
    return (len(value),) if isinstance(value, list) else tuple(int(n) for n in value.shape)


def _page(title: str, formula: str, sentences: list[str], shapes: str = "") -> str:
    body = " ".join(s for s in sentences if s)
    parts = [f"<h3>{html.escape(title)}</h3>"]
    if formula:
        parts.append(_formula(formula))
    parts.append(f"<p>{body}</p>")
    if shapes:
        parts.append(f"<p><b>In this run:</b> {shapes}</p>")
    return "\n".join(parts)


def _toks(trace: Trace, side: str) -> list[str]:
    return [str(t) for t in trace.get(names.side_entry(side, "tokens")) or []]


# ------------------------------------------------------------------------------------------ inputs
def _inputs(stage: Stage, trace: Trace) -> str:
    side = stage.side or "src"
    toks = _toks(trace, side)
    n = len(toks)
    d = (_shape(trace, names.side_entry(side, "embed")) or (n, 0))[-1]
    has_pad = "<pad>" in toks
    if stage.kind == "tokens":
        if side == "tgt":
            shifted = names.side_entry("src", "tokens") in trace
            role = (
                (
                    "The decoder input is the translation shifted one place to the right: &lt;s&gt; followed by "
                    "the translation minus its last word. "
                    if shifted
                    else ""
                )
                + "At position t the model must predict token t + 1 while seeing only the tokens up to t "
                "(teacher forcing during training; during generation its own earlier guesses). That is why the "
                "decoder panels label each row “input → predicted”, e.g. &lt;s&gt; → le: every row but the last "
                "names the next input token it is trained to predict, the last one the model's own most "
                "likely next token."
            )
        else:
            role = "The source ends with &lt;/s&gt; so the model can tell where the sentence stops."
        pad = (
            (
                "&lt;pad&gt; tokens only fill the sequence up to a fixed length; the padding mask hides them "
                "from attention."
            )
            if has_pad
            else ""
        )
        return _page(
            "Tokenization",
            "text → pieces → ids",
            [
                "A tokenizer cuts the text into pieces from a fixed vocabulary and replaces each piece by its "
                "integer id; the network never sees letters, only these ids.",
                role,
                pad,
                "Each id picks one row of the embedding table in the next step.",
            ],
            f"{n} {_token_word(side)} tokens → ids of shape [{n}].",
        )
    if stage.kind == "embed":
        scaled = trace.config is None or trace.config.scale_embedding
        return _page(
            "Token embedding",
            fm.embed_formula(trace.config),
            [
                f"The embedding table E holds one learned vector of {DM} numbers per vocabulary "
                "entry, and looking up a token is just reading the row with its id.",
                "The lookup ignores where the token stands: two copies of a repeated word get identical rows.",
                f"This model multiplies the rows by √{DM} so they are not drowned by the positional encoding "
                "added next."
                if scaled
                else f"This model uses the rows as they are (no × √{DM}).",
            ],
            f"{n} tokens × {DM} = {d} → [{n}, {d}].",
        )
    pos = _shape(trace, names.side_entry(side, "pos"))
    if stage.kind == "pos":
        return _positions(trace, pos)
    added = "embedding + positional encoding" if pos is not None else "the embedding alone (no PE table)"
    return _page(
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
        return _page(
            "Positional encoding: rotary (nothing added here)",
            fm.pe_formula(trace.config, trace.options),
            [
                "This model adds no position vector to the embedding: inside every self-attention it rotates each "
                "query and key by an angle proportional to its position, so the score q · k depends on how far "
                "apart the two tokens are."
            ],
        )
    if kind == "none" or pos is None:
        off = trace.options is not None and not trace.options.positional
        return _page(
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
        return _page(
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
    return _page(
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


# --------------------------------------------------------------------------------------- attention
def _attention(stage: Stage, trace: Trace) -> str:
    site = stage.site or ""
    kind = stage.kind
    q_side, k_side = site_sides(site)
    q_name = names.site_entry(site, "q")
    w = _shape(trace, names.site_entry(site, "weights")) or _shape(trace, q_name) or (0, 0, 0)
    q = _shape(trace, q_name) or (w[0], w[1], 0)
    h, tq, tk = w[0], w[1], w[2] if len(w) > 2 else 0
    dk = q[2] if len(q) > 2 else 0
    where = site_name(site)
    cross = q_side != k_side
    source = (
        "Queries come from the decoder tokens; keys and values come from the encoder's final output, "
        "so each decoder position can read the whole source sentence."
        if cross
        else "Queries, keys and values are all computed from the same tokens (self-attention)."
    )
    hs = f"{h} heads" if h != 1 else "1 head"
    scale = scaling_on(trace)
    if kind == "qkv":
        rotary = not cross and fm.pe_kind(trace.config, trace.options) == "rotary"
        return _page(
            f"Q, K, V · {where}",
            fm.qkv_formula(rotary),
            [
                "Three learned d × d matrices turn every token vector into a query (what it looks "
                "for), a key (what it can be matched on) and a value (what it hands over).",
                source,
                f"Each result is cut into {hs} of {DK} = {DM} / H = {dk} numbers, and every head attends on its own.",
            ],
            f"Q: {h} heads × {tq} tokens × {dk}; K and V: {h} heads × {tk} tokens × {dk}.",
        )
    if kind == "scores":
        return _page(
            f"Scores QKᵀ · {where}",
            FORMULAS["scores"],
            [
                f"Each score is a dot product of {dk} pairs of numbers: large and positive when query i and "
                "key j point the same way, negative when they point apart.",
                "Row i of the map holds query i's scores against every key.",
                ""
                if not cross
                else "In cross-attention the map is rectangular: decoder positions down, source tokens across.",
            ],
            f"S: {hs} × {tq} queries × {tk} keys.",
        )
    if kind == "scaled":
        off = not scaling_on(trace)
        state = (
            f"Scaling is switched OFF in this run, so these are the raw scores: with large {DK} "
            "the softmax becomes nearly one-hot and its gradients vanish."
            if off
            else f"Here √{DK} = √{dk} ≈ {math.sqrt(dk) if dk else 0:.2f}."
        )
        return _page(
            f"{'Divide by √dₖ' if not off else 'Divide by √dₖ — switched off'} · {where}",
            fm.scaled_formula(not off),
            [
                f"If the numbers of q and k have mean 0 and variance 1, their dot product is a sum of {DK} "
                f"such products: its mean stays 0 but its variance grows to {DK}, its spread to "
                f"√{DK}.",
                f"Dividing by √{DK} brings the spread back to about 1 whatever the "
                "head size, which keeps the softmax in its sensitive range.",
                state,
            ],
            f"S′: {hs} × {tq} × {tk}.",
        )
    if kind == "scale_why":
        return _scale_why(where, dk)
    if kind in ("mask", "masked"):
        return _mask(trace, site, kind, where, h, tq, tk)
    return _after_softmax(kind, where, h, tq, tk, dk, scale)


def _scale_why(where: str, dk: int) -> str:
    return _page(
        f"Why divide by √dₖ? · {where}",
        f"Var(q · k) = {DK} when every q<sub>i</sub>, k<sub>i</sub> has variance 1, so std(q · k) = √{DK}",
        [
            "Left: the scores of this site before and after the division, on the same bins, and each "
            "head's softmax entropy both ways (higher = attention spread over more keys; the dashed "
            "line is an even spread). Both are computed from the recorded raw scores and mask, "
            "whatever the run's scaling toggle says.",
            f"Right: q and k drawn at random with unit-variance entries. Their dot product's spread "
            f"grows as √{DK}; without the division the softmax gives almost all weight to one key "
            "(its largest weight tends to 1), where its gradients vanish.",
            f"This site has {DK} = {dk}, √{DK} ≈ {math.sqrt(dk) if dk else 0:.2f}.",
        ],
    )


def _norm_compare(stage: Stage, trace: Trace) -> str:
    layer, n = stage.layer or "", stage.norm or 1
    shape = _shape(trace, names.norm_entry(names.norm(layer, n), "in")) or (0, 0)
    return _page(
        f"LayerNorm vs BatchNorm {n} · {layer_name(layer)}",
        "LN: μ, σ² of each token over its features &nbsp; BN: μ, σ² of each feature over the batch",
        [
            "Both norms read the same activations, the input of this add & norm step, and are shown "
            "without γ and β. LayerNorm takes one mean and variance per token (a row); BatchNorm one "
            "per feature (a column), over the batch, here the tokens of this sentence.",
            "The slider cuts the batch to the first L tokens: the chosen token's BatchNorm output "
            "moves as its neighbours come and go, its LayerNorm output never does. That is why "
            "Transformers, which see sentences of any length one at a time, use LayerNorm.",
        ],
        f"x: {shape[0]} tokens × {shape[1]} features; LayerNorm: {shape[0]} means, BatchNorm: "
        f"{shape[1] if len(shape) > 1 else 0} means.",
    )


def _after_softmax(kind: str, where: str, h: int, tq: int, tk: int, dk: int, scale: bool) -> str:
    """The attention steps from the weights on: weights, lines, heads, context, concat, × W_O."""
    d, hs = h * dk, f"{h} heads" if h != 1 else "1 head"
    if kind in ("weights", "lines"):
        title = "Attention weights" if kind == "weights" else "Token → token lines"
        return _page(
            f"{title} · {where}",
            fm.weights_formula(scale),
            [
                "softmax exponentiates every score of a row and divides by the row's total, so each "
                "row becomes weights between 0 and 1 that add up to 1; blocked keys (−∞) get "
                "exactly 0.",
                "A<sub>ij</sub> is how much of token j's value query i will take.",
                "The lines view draws these numbers as lines from each query to the keys it reads."
                if kind == "lines"
                else "",
            ],
            f"A: {hs} × {tq} × {tk}; every row sums to 1.",
        )
    if kind == "heads":
        return _page(
            f"All heads · {where}",
            "MultiHead(X) = Concat(head<sub>1</sub>, …, head<sub>H</sub>) W<sub>O</sub>",
            [
                f"The model splits its {d} dimensions into {hs} of {dk}: together they cost about "
                "the "
                "same as one full-width head, but each can learn its own kind of relation.",
                "Changing the head count here re-reads the same weight matrices in a different "
                "split, so the patterns change without retraining.",
            ],
            f"{hs} × {tq} × {tk} weight maps.",
        )
    if kind == "context":
        return _page(
            f"Weights · V · {where}",
            FORMULAS["context"],
            [
                "Each query's result is a weighted average of the value vectors, using its row of attention weights.",
                "A token that puts most weight on one key mostly copies that key's value; spread weights blend many.",
            ],
            f"per head: [{tq} × {tk}] · [{tk} × {dk}] = [{tq} × {dk}]; {hs} in all.",
        )
    if kind == "concat":
        return _page(
            f"Concatenate the heads · {where}",
            "Concat(head<sub>1</sub>, …, head<sub>H</sub>)",
            [
                f"The {h} head outputs of {dk} numbers are placed side by side, giving each token "
                f"{h} × {dk} = {d} numbers again.",
                "Nothing is mixed yet: each block of columns still comes from exactly one head.",
            ],
            f"[{tq} × {d}].",
        )
    return _page(
        f"Output projection W_O · {where}",
        "Attention(X) = Concat(heads) W<sub>O</sub>",
        [
            f"The d × d matrix W<sub>O</sub> ({d} × {d}) mixes what the heads found into one vector per token.",
            "This vector is what the residual connection adds to the layer's input in the next step.",
        ],
        f"[{tq} × {d}] · [{d} × {d}] = [{tq} × {d}].",
    )


def _mask(trace: Trace, site: str, kind: str, where: str, h: int, tq: int, tk: int) -> str:
    mask = trace.get(names.site_entry(site, "mask"))
    blocked = np.isneginf(mask.numpy()) if mask is not None else np.zeros((tq, tk), bool)
    n_blocked = int(blocked.sum())
    causal = tq == tk and tq > 1 and bool(blocked[np.triu_indices(tq, 1)].all())
    toks = _toks(trace, site_sides(site)[1])
    pads = sum(t == "<pad>" for t in toks)
    state = []
    state.append(
        "The causal (look-ahead) mask is on here: query i may only read keys 0 … i, because when "
        "the whole target is fed at once the model must not peek at the word it has to predict."
        if causal
        else "No causal mask at this site: every query may read every key it is allowed."
    )
    if pads:
        state.append(f"{pads} &lt;pad&gt; key(s) are blocked by the padding mask.")
    if kind == "mask":
        return _page(
            f"The mask · {where}",
            "M<sub>ij</sub> = 0 (allowed) or −∞ (blocked), added before the softmax",
            [
                "Adding −∞ makes e<sup>score</sup> exactly 0, so a blocked key gets no weight "
                "at all "
                "while the allowed ones still share a total of 1.",
                *state,
                "One [Tq × Tk] mask is shared by all heads. Click cells to block or free them.",
            ],
            f"M: [{tq} × {tk}], {n_blocked} of {tq * tk} cells blocked.",
        )
    return _page(
        f"Masked scores · {where}",
        fm.masked_formula(scaling_on(trace)),
        [
            "The mask is added to the scaled scores: allowed cells keep their value, blocked cells become −∞ "
            "(hatched).",
            *state,
        ],
        f"S″: {h} heads × {tq} × {tk}, {n_blocked} cells −∞ in every head.",
    )


# ------------------------------------------------------------------------------ add & norm, FFN
def _placement(trace: Trace, sub: str, word: str) -> str:
    placement = norm_placement(trace)
    add = residual_on(trace)
    if placement == "pre":
        return f"Pre-norm in this run: {word} comes BEFORE the {sub}: " + (
            f"x + {sub}({word}(x)), so the residual path carries x through untouched (as in GPT-2 and "
            "most recent models)."
            if add
            else f"{sub}({word}(x))."
        )
    if placement == "post":
        return f"Post-norm in this run: {word} comes AFTER the {'sum' if add else 'sub-layer'}: " + (
            f"{word}(x + {sub}(x)), as in the original Transformer." if add else f"{word}({sub}(x))."
        )
    return f"This trace does not say where its {word}s sit (it carries no run options)."


def _addnorm(stage: Stage, trace: Trace) -> str:
    layer, n = stage.layer or "", stage.norm or 1
    sub = names.sublayer_kind_words(sublayer_kind(trace, layer, n))
    shape = _shape(trace, names.norm_entry(names.norm(layer, n), "out")) or (0, 0)
    word = fm.norm_word(trace.config)
    rms = word != names.word("norm")
    placement = _placement(trace, sub, word)
    residual = (
        "The residual connection is switched OFF, so the sub-layer's output replaces x instead of being added to it."
        if not residual_on(trace)
        else "The skip connection x + F(x) gives gradients an identity path (∂y/∂x = I + ∂F/∂x), so deep "
        "stacks stay trainable and each layer only has to learn a correction."
    )
    how = (
        "RMSNorm works on each token separately: it divides the token's vector by its root mean square "
        "(no mean is removed), then the learned γ rescales."
        if rms
        else "LayerNorm works on each token separately: it removes that token's mean and divides by its "
        "standard deviation, then the learned γ"
        + (" and β rescale and shift." if trace.config is None or trace.config.norm_bias else " rescales (no β).")
    )
    title = fm.addnorm_title(trace.config, residual_on(trace), n)
    return _page(
        f"{title[0].upper()}{title[1:]} · {layer_name(layer)}",
        fm.norm_formula(trace.config)
        + "<br>"
        + fm.block_formula(norm_placement(trace), residual_on(trace), "RMSNorm" if rms else "LN"),
        [
            placement,
            residual,
            how,
            "Pre-norm usually trains more stably in deep stacks; post-norm needs careful warm-up.",
        ],
        f"{shape[0]} {_token_word(layer_side(layer))} tokens × {shape[1]}; "
        + ("one root mean square per token." if rms else "one mean and one variance per token."),
    )


def _ffn(stage: Stage, trace: Trace) -> str:
    layer = stage.layer or ""
    hidden = trace.get(names.ffn_entry(layer, "hidden"))
    t, d_ff = (int(hidden.shape[0]), int(hidden.shape[1])) if hidden is not None else (0, 0)
    d = (_shape(trace, names.ffn_entry(layer, "out")) or (0, 0))[1]
    relu = trace.config is None or trace.config.activation == "relu"
    zeros = (
        f" In this run {float((hidden == 0).float().mean()):.0%} of the hidden units are exactly 0."
        if relu and hidden is not None
        else ""
    )
    act, act_formula = fm.activation(trace.config)
    gated = trace.config is not None and trace.config.ffn == "gated"
    shape = (
        f"A gate projection passed through {act} multiplies an up projection element by element, and a "
        "down projection maps the result back"
        if gated
        else f"Two linear layers with {act} between them"
    )
    return _page(
        f"{names.word('ffn').capitalize()} · {layer_name(layer)}",
        fm.ffn_formula(trace.config) + "<br>" + act_formula,
        [
            f"{shape}, applied to every position on its own with the same weights: no information "
            "moves between tokens here.",
            f"The vector is widened from {DM} = {d} to {DFF} = {d_ff} "
            "(often four times wider), bent by the non-linearity and projected back.",
            "Attention only averages value vectors; this step is where each token's features are "
            "transformed non-linearly." + zeros,
        ],
        f"[{t} × {d}] → hidden [{t} × {d_ff}] → [{t} × {d}].",
    )


# ------------------------------------------------------------------------------------------ output
def _output(stage: Stage, trace: Trace) -> str:
    shape = _shape(trace, names.LOGITS) or _shape(trace, names.PROBS) or (0, 0)
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
        return _page(
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
    return _page(
        "Next-token probabilities",
        "p = softmax(logits / T)",
        [
            "softmax turns the logits of a position into probabilities that sum to 1.",
            "The temperature T reshapes them: T &lt; 1 sharpens the distribution toward the top token, T &gt; 1 "
            "flattens it.",
            pos_word,
        ],
        f"[{t} × {v}], each row sums to 1.",
    )


def explanation_html(stage: Stage, trace: Trace) -> str:
    """A short explanation of `stage` with its formula and the live shapes from `trace` (HTML)."""
    imported = explain_imported.imported_explanation(stage, trace)  # RMSNorm, SwiGLU, GQA
    if imported is not None:
        return imported
    if stage.kind in ("tokens", "embed", "pos", "input"):
        return _inputs(stage, trace) + explain_imported.extra_notes(stage, trace)
    if stage.kind in (names.LOGITS, names.PROBS):
        return _output(stage, trace) + explain_imported.extra_notes(stage, trace)
    if stage.kind == "addnorm":
        return _addnorm(stage, trace)
    if stage.kind == NORM_COMPARE:
        return _norm_compare(stage, trace)
    if stage.kind == "ffn":
        return _ffn(stage, trace)
    if stage.site:
        from attnlab.present.explain_study import study_notes

        return _attention(stage, trace) + study_notes(stage.site, trace) + explain_imported.extra_notes(stage, trace)
    return _page(stage.title, "", ["No explanation is written for this step yet."])
