"""The ordered list of stages a person steps through, derived from a Trace. Qt-free.

A Stage names what to show (its `kind` picks the panel) and where to find it in the Trace (`site` for
attention stages, `layer` prefix for add & norm and FFN, `side` for inputs); `stage_tensors` lists the trace
entries it shows and `shape_text` their live shapes. Every name is built through `attnlab.engine.names`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnlab.engine import names

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

OUTPUT_STEPS = ((names.LOGITS, "output logits"), (names.PROBS, "softmax → next token"))


OUTPUT = "out"  # stage keys of the output steps: "out.logits", "out.probs"
OUTPUT_BOX = "output"  # the schematic box of the output steps


def output_key(kind: str) -> str:
    """The stage key of an output step: names.PROBS -> 'out.probs' (the trace entry itself is 'probs')."""
    return f"{OUTPUT}.{kind}"


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
            return names.side_entry(self.side, "input")
        if self.site:
            return self.site
        if self.kind == "ffn" and self.layer:
            return names.ffn(self.layer)
        if self.kind == "addnorm" and self.layer and self.norm:
            return names.norm(self.layer, self.norm)
        return OUTPUT_BOX


def _attention_stages(site: str, group: str, masked_self: bool) -> list[Stage]:
    kind_name = names.site_words(site, causal=masked_self)
    return [Stage(names.site_entry(site, k), k, f"{kind_name} · {t}", group, site=site) for k, t in ATTENTION_STEPS]


def _addnorm(layer: str, n: int, group: str, rms: bool = False) -> Stage:
    """'add & LayerNorm 2', or 'add & RMSNorm 2' for a model whose norms are RMSNorms (Llama, Qwen2)."""
    title = f"add & {names.word('rmsnorm')} {n}" if rms else f"{names.word('addnorm')} {n}"
    return Stage(names.norm(layer, n), "addnorm", title, group, layer=layer, norm=n)


def _ffn(layer: str, group: str) -> Stage:
    return Stage(names.ffn(layer), "ffn", names.word("ffn"), group, layer=layer)


def _inputs(trace: Trace, side: str) -> list[Stage]:
    steps = [s for s in INPUT_STEPS if s[0] != "pos" or names.side_entry(side, "pos") in trace]
    return [Stage(names.side_entry(side, k), k, t, names.word(side), side=side) for k, t in steps]


def _layers(trace: Trace, stack: str) -> list[str]:
    """'enc.0', 'enc.1', … for every layer of `stack` this trace recorded."""
    found, index = [], 0
    while names.site_entry(names.site(names.layer(stack, index), "self"), "weights") in trace:
        found.append(names.layer(stack, index))
        index += 1
    return found


def _layer_stages(trace: Trace, layer: str) -> list[Stage]:
    """One layer in computation order: self-attention, add & norm, [cross-attention, add & norm,] FFN, add & norm."""
    group = names.layer_words(layer)
    stack = names.stack_of(layer)
    cross = names.site(layer, "cross")
    has_cross = names.site_entry(cross, "weights") in trace
    rms = trace.config is not None and trace.config.norm == "rmsnorm"
    stages = _attention_stages(names.site(layer, "self"), group, stack == "dec")
    stages.append(_addnorm(layer, 1, group, rms))
    if has_cross:
        stages += _attention_stages(cross, group, False)
        stages.append(_addnorm(layer, 2, group, rms))
    return stages + [_ffn(layer, group), _addnorm(layer, names.sublayer_count(stack, has_cross), group, rms)]


def stages_for(trace: Trace) -> list[Stage]:
    """Every stage of this run in computation order."""
    stages: list[Stage] = []
    for side in names.SIDES:
        if names.side_entry(side, "tokens") in trace:
            stages += _inputs(trace, side)
            for layer in _layers(trace, names.side_stack(side)):
                stages += _layer_stages(trace, layer)
    stages += [Stage(output_key(k), k, t, names.word("output")) for k, t in OUTPUT_STEPS]
    return stages


def pick_stage(stages: list[Stage], key: str | None) -> Stage | None:
    """The stage called `key`; else the first of its group ("Encoder layer 2"); else the first stage."""
    if not stages:
        return None
    by_key = {s.key: s for s in stages}
    if key in by_key:
        return by_key[key]
    if key:
        group = _group_prefix(key)
        for s in stages:
            if _group_prefix(s.key) == group:
                return s
    return stages[0]


def _group_prefix(key: str) -> str:
    return names.layer_of(key) or key.split(".", 1)[0]


# The site steps each attention stage kind shows.
_SITE_TENSORS = {"qkv": ("q", "k", "v"), "scores": ("scores",), "scaled": ("scaled",), "mask": ("mask",),
                 "masked": ("masked",), "weights": ("weights",), "heads": ("weights",), "lines": ("weights",),
                 "context": ("context",), "concat": ("concat",), "attn_out": ("out",)}


def stage_tensors(stage: Stage) -> list[str]:
    """The trace entries a stage shows, e.g. ['enc.0.self.q', 'enc.0.self.k', 'enc.0.self.v']."""
    if stage.site:
        return [names.site_entry(stage.site, step) for step in _SITE_TENSORS.get(stage.kind, ())]
    if stage.side:
        return [names.side_entry(stage.side, "ids" if stage.kind == "tokens" else stage.kind)]
    if stage.kind == "addnorm" and stage.layer and stage.norm:
        return [names.resid(stage.layer, stage.norm), names.norm_entry(names.norm(stage.layer, stage.norm), "out")]
    if stage.kind == "ffn" and stage.layer:
        return [names.ffn_entry(stage.layer, "hidden"), names.ffn_entry(stage.layer, "out")]
    return [stage.kind]  # the output steps: "logits", "probs"


def shape_text(trace: Trace, stage: Stage) -> str:
    """'enc.0.self.q [4 × 7 × 32] · …': the live shapes of what the stage shows."""
    parts = []
    for name in stage_tensors(stage):
        value = trace.get(name)
        if value is not None and hasattr(value, "shape"):
            parts.append(f"{name} [{' × '.join(str(n) for n in value.shape)}]")
    return " · ".join(parts)


@dataclass(frozen=True)
class ViewState:
    """What the person chose to look at, independent of the run: it changes drawing, never computation."""

    head: int = 0  # selected head of the current attention site
    colormap: str = "viridis"
    top_k: int = 10  # bars in the output distribution
    position: int = -1  # decoder position whose next-token distribution is shown (-1 = last)
    pe_dims: tuple[int, ...] = (0, 1, 4, 5)  # model dimensions drawn as sine/cosine curves
