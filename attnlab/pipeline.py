"""The ordered list of stages a person steps through, derived from a Trace. Qt-free.

A Stage names what to show (its `kind` picks the panel) and where to find it in the Trace (`site` for
attention stages, `layer` prefix for add & norm and FFN, `side` for inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only a type hint here: importing the engine's trace pulls in torch (~1.3 s at start-up)
    from attnlab.engine.trace import Trace

# Attention steps in order: (kind, title). Each is one stage per attention site.
ATTENTION_STEPS = (
    ("qkv", "Q, K, V"),
    ("scores", "QKᵀ scores"),
    ("scaled", "÷ √dₖ"),
    ("mask", "mask"),
    ("masked", "masked scores"),
    ("weights", "softmax → weights"),
    ("heads", "all heads"),
    ("lines", "token → token lines"),
    ("context", "weights · V"),
    ("concat", "concat heads"),
    ("attn_out", "× W_O"),
)

INPUT_STEPS = (("tokens", "tokenization"), ("embed", "embedding"), ("pos", "+ positional encoding"),
               ("input", "embedding + position"))

OUTPUT_STEPS = (("logits", "output logits"), ("probs", "softmax → next token"))


@dataclass(frozen=True)
class Stage:
    key: str  # unique and stable, e.g. "enc.0.self.scores", "dec.1.norm3", "src.tokens", "out.probs"
    kind: str  # which panel draws it: one of the kinds above, or "addnorm", "ffn"
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
            return f"{self.side}.input"
        if self.site:
            return self.site
        if self.kind == "ffn":
            return f"{self.layer}.ffn"
        if self.kind == "addnorm":
            return f"{self.layer}.norm{self.norm}"
        return "output"


_SITE_NAMES = {"self": "self-attention", "cross": "cross-attention"}


def _attention_stages(site: str, group: str, masked_self: bool) -> list[Stage]:
    kind_name = _SITE_NAMES[site.rsplit(".", 1)[1]]
    if masked_self:
        kind_name = "masked " + kind_name
    return [Stage(f"{site}.{k}", k, f"{kind_name} · {t}", group, site=site) for k, t in ATTENTION_STEPS]


def _addnorm(layer: str, n: int, group: str) -> Stage:
    return Stage(f"{layer}.norm{n}", "addnorm", f"add & LayerNorm {n}", group, layer=layer, norm=n)


def _inputs(trace: Trace, side: str, group: str) -> list[Stage]:
    steps = [s for s in INPUT_STEPS if s[0] != "pos" or f"{side}.pos" in trace]
    return [Stage(f"{side}.{k}", k, t, group, side=side) for k, t in steps]


def stages_for(trace: Trace) -> list[Stage]:
    """Every stage of this run in computation order."""
    stages: list[Stage] = []
    if "src.tokens" in trace:
        stages += _inputs(trace, "src", "Source input")
        layer = 0
        while f"enc.{layer}.self.weights" in trace:
            group = f"Encoder layer {layer + 1}"
            stages += _attention_stages(f"enc.{layer}.self", group, False)
            stages += [_addnorm(f"enc.{layer}", 1, group),
                       Stage(f"enc.{layer}.ffn", "ffn", "feed-forward network", group, layer=f"enc.{layer}"),
                       _addnorm(f"enc.{layer}", 2, group)]
            layer += 1
    if "tgt.tokens" in trace:
        stages += _inputs(trace, "tgt", "Decoder input")
        layer = 0
        while f"dec.{layer}.self.weights" in trace:
            group = f"Decoder layer {layer + 1}"
            stages += _attention_stages(f"dec.{layer}.self", group, True)
            stages.append(_addnorm(f"dec.{layer}", 1, group))
            n = 2
            if f"dec.{layer}.cross.weights" in trace:
                stages += _attention_stages(f"dec.{layer}.cross", group, False)
                stages.append(_addnorm(f"dec.{layer}", 2, group))
                n = 3
            stages += [Stage(f"dec.{layer}.ffn", "ffn", "feed-forward network", group, layer=f"dec.{layer}"),
                       _addnorm(f"dec.{layer}", n, group)]
            layer += 1
    stages += [Stage(f"out.{k}", k, t, "Output") for k, t in OUTPUT_STEPS]
    return stages


@dataclass(frozen=True)
class ViewState:
    """What the person chose to look at, independent of the run: it changes drawing, never computation."""

    head: int = 0  # selected head of the current attention site
    colormap: str = "viridis"
    top_k: int = 10  # bars in the output distribution
    position: int = -1  # decoder position whose next-token distribution is shown (-1 = last)
    pe_dims: tuple[int, ...] = (0, 1, 4, 5)  # model dimensions drawn as sine/cosine curves
