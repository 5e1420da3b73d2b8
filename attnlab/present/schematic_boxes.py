"""What the architecture schematic draws, without the drawing: the stacks of a model, the boxes of one layer
top to bottom (their stage keys, words and kinds) wired as a run's options wire them, the residual branches,
and the keys of the layer chips. Qt-free; ui/plots/schematic.py places and paints these boxes.

A box's key is the name `Stage.schematic_box` uses ("enc.0.self", "dec.1.norm2", "src.input", "output")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present import words
from attnlab.present.explain_layers import shared_layers_label
from attnlab.present.formulas import norm_word, pe_kind
from attnlab.present.stages import OUTPUT_BOX

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import ResolvedOptions

# (box, text, kind) of one box of a stack's column; kind: input, attn, ffn, norm, add or output
ColumnBox = tuple[str, str, str]
Branch = tuple[int, int | None]  # a residual branch: (its first box, the box it joins, or None when cut)
FIRST_SITE = {stack: names.site(names.layer(stack, 0), "self") for stack in names.STACKS}  # "enc.0.self", …
# the input box by what this run does about positions (present.formulas.pe_kind)
INPUT_LABELS = {
    "sinusoidal": "Embedding + sinusoidal PE",
    "learned": "Embedding + learned positions",
    "rotary": "Embedding (+ rotary)",
    "none": "Embedding",
}
# a box's text when its box is too narrow for it
SHORT = {
    words.word("masked self").capitalize(): "Masked self-attn.",
    "Embedding (+ rotary)": "Emb. (+ rotary)",
    "Embedding + sinusoidal PE": "Emb. + sin. PE",
    "Embedding + learned positions": "Emb. + learned pos.",
    "Final LayerNorm (γ=1, β=0)": "Final LN (γ=1, β=0)",
    words.word("cross").capitalize(): "Cross-attn.",
    words.word("self").capitalize(): "Self-attn.",
}


def trained_wiring(config: ModelConfig) -> ResolvedOptions:
    """How a model is wired as trained (the default run options): drawn until its first trace arrives."""
    return RunOptions().resolved(config)


def layer_counts(config: ModelConfig) -> dict[str, int]:
    """{"enc": encoder layers, "dec": decoder layers}."""
    return {"enc": config.n_encoder_layers, "dec": config.n_decoder_layers}


def drawn_stacks(config: ModelConfig) -> tuple[str, ...]:
    """The stacks drawn side by side, left to right: ("enc", "dec") for an encoder-decoder, else one."""
    if config.arch == "encoder-decoder":
        return ("enc", "dec")
    return ("enc",) if config.arch == "encoder-only" else ("dec",)


def wiring(config: ModelConfig, options: ResolvedOptions) -> tuple:
    """Everything the drawing depends on in a run's options: a toggle that changes none of it (heads,
    scaling, temperature, …) leaves the schematic alone."""
    return (
        config,
        options.norm_first,
        options.output_norm,
        options.residual,
        options.positional,
        options.final_norm,
        options.is_causal(FIRST_SITE["enc"]),
        options.is_causal(FIRST_SITE["dec"]),
    )


def wiring_title(config: ModelConfig, options: ResolvedOptions) -> str:
    """The line above the stacks: where the norms sit and whether the residual is on."""
    title = "Pre-norm: Norm → sub-layer → +" if options.norm_first else "Post-norm: sub-layer → Add & Norm"
    if options.output_norm:  # OLMo-2, x + Norm(F(x)); Gemma 2, x + Norm(F(Norm(x)))
        sandwich = config.sublayer_norm == "sandwich"
        title = "Sandwich: Norm → sub-layer → Norm → +" if sandwich else "Norm on the output: sub-layer → Norm → +"
    return title if options.residual else title + " (no residual)"


def residual_on(options: ResolvedOptions) -> bool:
    """Whether the run adds the residual (the skip paths drawn solid, else grey and cut)."""
    return options.residual


def feeds_decoder(config: ModelConfig) -> bool:
    """Whether a stack's output goes on to a decoder (drawn as a line out of the encoder's column)."""
    return config.has_decoder


def stack_header(side: str, n_layers: int) -> str:
    """ "Encoder ×6"."""
    return f"{words.word(side)} ×{n_layers}"


def shared_note(config: ModelConfig, side: str, n_layers: int) -> str | None:
    """ALBERT's note under the encoder's header (one layer's weights used by every layer), else None."""
    return shared_layers_label(n_layers) if side == "enc" and config.share_layers else None


def chip_box(side: str, index: int) -> str:
    """The box a layer chip stands for: the self-attention of layer `index` of stack `side`."""
    return names.site(names.layer(side, index), "self")


def cross_box(side: str, index: int) -> str:
    """The cross-attention box of layer `index` of stack `side` (where the encoder's output comes in)."""
    return names.site(names.layer(side, index), "cross")


def box_layer(box: str) -> tuple[str, int] | None:
    """(stack, layer index) of a box inside a layer, else None."""
    return names.layer_position(box)


def same_layer(a: str, b: str) -> bool:
    """Whether two boxes are in the same layer (or both outside every layer)."""
    return names.layer_of(a) == names.layer_of(b)


def column(
    config: ModelConfig, options: ResolvedOptions, side: str, index: int, output: bool
) -> tuple[list[ColumnBox], list[Branch], int, int]:
    """The boxes of stack `side` of model `config` as (box, text, kind), top to bottom, showing layer `index`,
    with the norms where the options put them; the residual branches as (first box of the branch, the box it
    joins, or None when cut); and where the repeated layer starts and ends."""
    here = names.layer(side, index)
    boxes: list[ColumnBox] = [
        (names.side_entry(names.stack_side(side), "input"), INPUT_LABELS[pe_kind(config, options)], "input")
    ]
    norm = norm_word(config)
    attn = words.site_words(FIRST_SITE[side], causal=options.is_causal(FIRST_SITE[side])).capitalize()
    subs = [(names.site(here, "self"), attn, "attn")]
    if side == "dec" and config.has_encoder:
        subs.append((names.site(here, "cross"), words.word("cross").capitalize(), "attn"))
    subs.append((names.ffn(here), words.word("moe.box" if config.n_experts else "ffn.box"), "ffn"))
    pre, residual = options.norm_first, options.residual
    layer_start = len(boxes)
    branches: list[Branch] = []
    for n, sub in enumerate(subs, 1):
        norm_box, first = names.norm(here, n), len(boxes)
        if options.output_norm:  # OLMo-2, sub-layer → Norm → +; Gemma 2, Norm → sub-layer → Norm → +
            post = (names.post_norm(here, n), f"{norm} (post)", "norm")
            sandwich = config.sublayer_norm == "sandwich" and sub[2] in ("attn", "ffn") and "cross" not in sub[0]
            before, after = ([(norm_box, norm, "norm")], post) if sandwich else ([], (norm_box, norm, "norm"))
            boxes += [*before, sub, after, *([(after[0], "+", "add")] if residual else [])]
            branches.append((first, len(boxes) - 1 if residual else None))
            continue
        if pre:
            boxes.append((norm_box, norm, "norm"))
        boxes.append(sub)
        if pre and residual:
            boxes.append((norm_box, "+", "add"))
        elif not pre:
            boxes.append((norm_box, f"Add & {norm}" if residual else f"{norm} (no add)", "norm"))
        branches.append((first, len(boxes) - 1 if (residual or not pre) else None))
    layer_end = len(boxes)
    if config.final_norm if options.final_norm is None else options.final_norm:
        trained = config.final_norm and options.final_norm is None
        final = f"Final {norm}" if trained or config.final_norm else "Final LayerNorm (γ=1, β=0)"
        boxes.append(("", final, "norm"))
    if output:
        boxes.append((OUTPUT_BOX, "Linear + softmax", "output"))
    return boxes, branches, layer_start, layer_end
