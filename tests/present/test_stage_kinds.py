"""One registration per stage kind (issue 33.3): every kind the stage list can produce has exactly one view
builder and one explanation (present/kinds.KINDS) and one panel (ui/stages.PANELS), keyed by the same kinds.

The stage lists come from `stages_for_config` over configs that switch on each mechanism that adds a stage
(QK-norm, soft-capping, a sandwich's second norm, DeBERTa's and BERT relative_key's score terms, a position
bias, a factorised embedding, a mixture of experts, the logit lens), so a kind added to present/stages.py
without its three registrations, or a registration nothing produces any more, fails here."""

from __future__ import annotations

from dataclasses import replace

import pytest

from attnlab.engine.config import ModelConfig
from attnlab.present.kinds import KINDS, explanation_of, kind_of
from attnlab.present.stage_types import Stage
from attnlab.present.stages import stages_for_config

BASE = ModelConfig()  # the classroom encoder-decoder
DECODER = replace(BASE, arch="decoder-only", n_encoder_layers=0)
ENCODER = replace(BASE, arch="encoder-only", n_decoder_layers=0)
CONFIGS = {
    "classroom": BASE,
    "decoder LM": DECODER,  # the logit lens
    "gemma 2": replace(DECODER, norm="rmsnorm", qk_norm="head", attn_softcap=50.0, sublayer_norm="sandwich"),
    "mixtral": replace(DECODER, ffn="gated", n_experts=4, experts_per_token=2),
    "bloom": replace(DECODER, positional="none", position_bias="alibi"),
    "deberta": replace(ENCODER, positional="none", rel_terms="c2p|p2c", rel_span=4),
    "bert relative_key": replace(ENCODER, positional="none", rel_key_terms="key_query", rel_key_span=BASE.max_len),
    "albert": replace(ENCODER, embed_dim=8),
}


def produced_kinds() -> dict[str, set[str]]:
    """{kind: the configs whose stage list has it}."""
    seen: dict[str, set[str]] = {}
    for name, config in CONFIGS.items():
        assert not config.problems(), (name, config.problems())
        for stage in stages_for_config(config):
            seen.setdefault(stage.kind, set()).add(name)
    return seen


def test_every_produced_kind_has_a_view_an_explanation_and_a_panel() -> None:
    from attnlab.ui.stages import PANELS

    produced = produced_kinds()
    assert set(produced) - set(KINDS) == set(), "kinds without a view builder and explanation (present/kinds.py)"
    assert set(produced) - set(PANELS) == set(), "kinds without a panel (ui/stages PANELS)"
    assert set(KINDS) == set(PANELS), "present/kinds.py and ui/stages PANELS register different kinds"
    assert set(KINDS) - set(produced) == set(), "registered kinds no stage list produces (stale, or a config missing)"
    for kind, spec in KINDS.items():
        assert callable(spec.view) and callable(spec.explain), kind


def test_a_panel_draws_exactly_the_kinds_the_table_gives_it() -> None:
    from attnlab.ui.stages import PANEL_CLASSES, PANELS, panel_class_for

    for kind, cls in PANELS.items():
        assert panel_class_for(kind) is cls and kind in cls.kinds
    assert sorted(k for cls in PANEL_CLASSES for k in cls.kinds) == sorted(PANELS)  # each kind in one class


def test_an_unregistered_kind_is_named() -> None:
    from attnlab.ui.stages import panel_class_for

    nonsense = Stage("x.nonsense", "nonsense", "t", "g")
    with pytest.raises(ValueError, match="nonsense"):
        kind_of(nonsense)
    with pytest.raises(ValueError, match="nonsense"):
        explanation_of(nonsense, None)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="nonsense"):
        panel_class_for("nonsense")


def test_panels_draw_their_view_model_not_the_trace() -> None:
    """Only the panels' base (which hands the trace to present/kinds.view_for) and the window of positions (which
    hands it to present/position_range) hold a trace; every panel draws the view-model it is given."""
    import ast
    from pathlib import Path

    import attnlab.ui.stages as stages_package

    holders = {"base.py", "windowed.py"}
    for path in sorted(Path(stages_package.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        named |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
        named |= {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        if path.name not in holders:
            assert not named & {"Trace", "trace"}, (
                f"{path.name} reads the trace; move what it reads into its view builder"
            )
