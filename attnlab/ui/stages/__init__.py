"""One panel per pipeline stage kind. `PANELS` maps every kind that present/kinds.py registers (its view
builder and explanation) to the panel class that draws it: one registration per kind, keyed by the same kinds
(tests/present/test_stage_kinds.py fails when one is missing). The main window keeps one instance per class and asks
`panel_class_for(stage.kind)` which class draws a stage; a panel's `kinds` are filled from this table."""

from __future__ import annotations

from attnlab.present.stage_types import (
    FACTORISED,
    KV_CACHE,
    LENS,
    LOGITS,
    MOE,
    NORM_COMPARE,
    POST_NORM,
    PROBS,
    SCORE_TERMS,
)
from attnlab.ui.stages.addnorm import AddNormPanel
from attnlab.ui.stages.attention import AttentionMapPanel, MaskPanel, QKVPanel
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.disentangled import ScoreTermPanel
from attnlab.ui.stages.factorised import FactorisedPanel
from attnlab.ui.stages.ffn import FFNPanel
from attnlab.ui.stages.heads import HeadsPanel, LinesPanel
from attnlab.ui.stages.inputs import EmbeddingPanel, InputSumPanel, TokensPanel
from attnlab.ui.stages.kv_cache import KVCachePanel
from attnlab.ui.stages.lens import LensPanel
from attnlab.ui.stages.moe import MoEPanel
from attnlab.ui.stages.norm_compare import NormComparePanel
from attnlab.ui.stages.output import OutputPanel
from attnlab.ui.stages.position_bias import BiasPanel
from attnlab.ui.stages.positional import PositionalPanel
from attnlab.ui.stages.qk_norm import QKNormPanel
from attnlab.ui.stages.scaling import ScaleWhyPanel
from attnlab.ui.stages.site_vectors import AttentionOutputPanel, ConcatPanel, ContextPanel

PANELS: dict[str, type[StagePanel]] = {
    # the inputs
    "tokens": TokensPanel,
    "embed": EmbeddingPanel,
    "pos": PositionalPanel,
    "input": InputSumPanel,
    FACTORISED: FactorisedPanel,
    # one attention site
    "qk_norm": QKNormPanel,
    "qkv": QKVPanel,
    KV_CACHE: KVCachePanel,
    **{term: ScoreTermPanel for term in SCORE_TERMS},
    "scores": AttentionMapPanel,
    "scaled": AttentionMapPanel,
    "scale_why": ScaleWhyPanel,
    "bias": BiasPanel,
    "biased": AttentionMapPanel,
    "capped": AttentionMapPanel,
    "mask": MaskPanel,
    "masked": AttentionMapPanel,
    "weights": AttentionMapPanel,
    "heads": HeadsPanel,
    "lines": LinesPanel,
    "context": ContextPanel,
    "concat": ConcatPanel,
    "attn_out": AttentionOutputPanel,
    # the rest of a layer
    "addnorm": AddNormPanel,
    POST_NORM: AddNormPanel,
    NORM_COMPARE: NormComparePanel,
    "ffn": FFNPanel,
    MOE: MoEPanel,
    # the output
    LOGITS: OutputPanel,
    PROBS: OutputPanel,
    LENS: LensPanel,
}
PANEL_CLASSES: list[type[StagePanel]] = list(dict.fromkeys(PANELS.values()))  # each class once, in table order
for _cls in PANEL_CLASSES:
    _cls.kinds = tuple(kind for kind, cls in PANELS.items() if cls is _cls)


def panel_class_for(kind: str) -> type[StagePanel]:
    """The StagePanel subclass that draws stages of this kind; KeyError names the unknown kind."""
    try:
        return PANELS[kind]
    except KeyError:
        raise KeyError(f"no stage panel draws kind {kind!r}; known kinds: {sorted(PANELS)}") from None


__all__ = ["PANELS", "PANEL_CLASSES", "StagePanel", "panel_class_for"]
