"""What a stage is and what the person chose to look at: `Stage` (one step of the run, its `kind` picks the view
builder, explanation and panel: present/kinds.py), `ViewState`, and the names of the stage kinds that are not
trace entries. A leaf: it imports only the engine's names, so every module of present/ can use it (the stage
list itself is built in present/stages.py). Qt-free."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.engine import names

# stage kinds that are trace entry names too (engine/names.py), for the widgets, which name no engine module
FACTORISED = names.EMBED_PROJ  # ALBERT / ELECTRA: the map from the narrow embedding to d_model
SCORE_TERMS = (*names.DISENTANGLED_TERMS, *names.RELATIVE_KEY_TERMS)  # DeBERTa's, BERT relative_key's terms
LOGITS, PROBS, LENS = names.LOGITS, names.PROBS, names.LENS  # the output steps and the logit lens

MOE = "moe"  # the FFN stage of a sparse mixture of experts (engine/moe.py): router, chosen experts, output
MOE_TITLE = "mixture of experts: router → top-k experts"
NORM_COMPARE = "norm_vs_batch"  # the stage after every add & norm: LayerNorm vs BatchNorm on its input
NORM_COMPARE_TITLE = "LayerNorm vs BatchNorm"
KV_CACHE = "kv_cache"  # a decoder self-attention's KV cache at a generation step (present/views/kv_cache.py)
KV_CACHE_TITLE = "KV cache (generation)"
POST_NORM = "post_norm"  # the stage of a sandwich's second norm, on the sub-layer's output (Gemma 2)

OUTPUT = "out"  # stage keys of the output steps: "out.logits", "out.probs"
OUTPUT_BOX = "output"  # the schematic box of the output steps


def output_key(kind: str) -> str:
    """The stage key of an output step: names.PROBS -> 'out.probs' (the trace entry itself is 'probs')."""
    return f"{OUTPUT}.{kind}"


@dataclass(frozen=True)
class Stage:
    key: str  # unique and stable, e.g. "enc.0.self.scores", "dec.1.norm3", "src.tokens", "out.probs"
    kind: str  # which view, explanation and panel show it (present/kinds.py, ui/stages PANELS)
    title: str  # "self-attention · QKᵀ scores"
    group: str  # "Source input", "Encoder layer 1", "Decoder input", "Decoder layer 2", "Output"
    side: str | None = None  # "src" / "tgt" for input stages
    site: str | None = None  # "enc.0.self", "dec.1.cross" for attention stages
    layer: str | None = None  # "enc.0" / "dec.1" for layer stages
    norm: int | None = None  # 1..3: which add & norm of the layer

    @property
    def schematic_box(self) -> str:
        """Which box of the architecture schematic this stage lights up."""
        if self.side:
            return names.side_entry(self.side, "input")
        if self.site:
            return self.site
        if self.kind in ("ffn", MOE) and self.layer:
            return names.ffn(self.layer)
        if self.kind in ("addnorm", NORM_COMPARE) and self.layer and self.norm:
            return names.norm(self.layer, self.norm)
        if self.kind == POST_NORM and self.layer and self.norm:
            return names.post_norm(self.layer, self.norm)
        return OUTPUT_BOX


COMPARE_MODES = (("off", "Off"), ("side", "A | B side by side"), ("diff", "A | B | B − A"))  # ViewState.compare


@dataclass(frozen=True)
class ViewState:
    """What the person chose to look at, independent of the run: it changes drawing, never computation."""

    head: int = 0  # selected head of the current attention site
    colormap: str = "viridis"
    top_k: int = 10  # bars in the output distribution
    position: int = -1  # decoder position whose next-token distribution is shown (-1 = last)
    pe_dims: tuple[int, ...] = (0, 1, 4, 5)  # model dimensions drawn as sine/cosine curves
    # colours of one attention site's score-like maps (scores, ÷√dₖ, masked): "shared" one scale for all three,
    # so the ÷√dₖ shrinking is seen; "panel" each autoscaled; "fixed" the same ±FIXED_SCORE_RANGE everywhere
    colour_scale: str = "shared"
    compare: str = "off"  # with a pinned run A: "off", "side" (A | B) or "diff" (A | B | B − A); compare.py
    # long inputs: the window of positions the panels that list tokens show, (start, size); size 0 = all
    # (present/position_range.py)
    positions: tuple[int, int] = (0, 0)
    # a generation's timeline (present/timeline.py): the decoder position scrubbed to; the attention maps show
    # rows 0 … upto and the KV-cache stage that step's cache (-1: every row, the last step)
    upto: int = -1


COLOUR_SCALES = (("shared", "Shared by the site's score maps"), ("panel", "Per panel"), ("fixed", "Fixed range (±10)"))
FIXED_SCORE_RANGE = 10.0
SCORE_KINDS = ("scores", "scaled", "biased", "capped", "masked")  # the score-like maps of an attention site
