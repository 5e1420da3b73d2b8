"""One panel per pipeline stage kind. The main window keeps one instance per class and asks
`panel_class_for(stage.kind)` which class draws a stage."""

from __future__ import annotations

from attnlab.ui.stages.addnorm import AddNormPanel
from attnlab.ui.stages.attention import AttentionMapPanel, MaskPanel, QKVPanel
from attnlab.ui.stages.base import StagePanel
from attnlab.ui.stages.disentangled import ScoreTermPanel
from attnlab.ui.stages.factorised import FactorisedPanel
from attnlab.ui.stages.ffn import FFNPanel
from attnlab.ui.stages.heads import HeadsPanel, LinesPanel
from attnlab.ui.stages.inputs import EmbeddingPanel, InputSumPanel, TokensPanel
from attnlab.ui.stages.lens import LensPanel
from attnlab.ui.stages.moe import MoEPanel
from attnlab.ui.stages.norm_compare import NormComparePanel
from attnlab.ui.stages.output import OutputPanel
from attnlab.ui.stages.position_bias import BiasPanel
from attnlab.ui.stages.positional import PositionalPanel
from attnlab.ui.stages.qk_norm import QKNormPanel
from attnlab.ui.stages.scaling import ScaleWhyPanel
from attnlab.ui.stages.site_vectors import AttentionOutputPanel, ConcatPanel, ContextPanel

PANEL_CLASSES: list[type[StagePanel]] = [
    TokensPanel,
    EmbeddingPanel,
    PositionalPanel,
    InputSumPanel,
    QKVPanel,
    AttentionMapPanel,
    MaskPanel,
    HeadsPanel,
    LinesPanel,
    ContextPanel,
    ConcatPanel,
    AttentionOutputPanel,
    AddNormPanel,
    FFNPanel,
    OutputPanel,
    ScaleWhyPanel,
    NormComparePanel,
    QKNormPanel,  # w-norms
    FactorisedPanel,
    ScoreTermPanel,  # DeBERTa's score terms
    LensPanel,
    MoEPanel,
    BiasPanel,
]

_BY_KIND: dict[str, type[StagePanel]] = {kind: cls for cls in PANEL_CLASSES for kind in cls.kinds}


def panel_class_for(kind: str) -> type[StagePanel]:
    """The StagePanel subclass that draws stages of this kind; KeyError names the unknown kind."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise KeyError(f"no stage panel draws kind {kind!r}; known kinds: {sorted(_BY_KIND)}") from None


__all__ = ["PANEL_CLASSES", "StagePanel", "panel_class_for"]
