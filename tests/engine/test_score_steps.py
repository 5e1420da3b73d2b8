"""Attention as a list of named score steps (engine/score_step.py, score_steps.py): every reader of a site's steps
reads the same list, and a mechanism added by one module and one registration works end to end.

The mechanism added here ("halve": the map times ½ after the scaling, a step no fused kernel does) is made in this
file alone; registering it in MECHANISMS (and its entry in mechanisms.REGISTRY) must be enough for the forward,
the derived rules (read whole and block by block), the stage list and the budget to know it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from attnlab.engine import derived, derived_blocks, mechanisms, score_steps
from attnlab.engine.budget import estimate_trace_bytes
from attnlab.engine.config import ModelConfig
from attnlab.engine.derived import Derived, register
from attnlab.engine.live import LiveModel
from attnlab.engine.mechanisms import Registration, StageStep
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.score_step import Mechanism, RunKey, ScoreStep, SiteRun
from attnlab.engine.trace import Recorder
from attnlab.present.stages import stages_for
from tests.support.recorded import finished
from tests.support.tiny import build_tiny_model

SRC, TGT = "the black cat sees the dog", "le chat noir"


def _halve(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5


@dataclass(frozen=True, eq=False)
class Halve(ScoreStep):
    fusable = False

    def apply(self, x: torch.Tensor, run: SiteRun, in_place: bool) -> torch.Tensor:
        return x.mul_(0.5) if in_place else _halve(x)


class Halving(Mechanism):
    name = "halve"

    def map_steps(self, config: ModelConfig) -> tuple[ScoreStep, ...]:
        return (Halve("halved", "halve"),)


@pytest.fixture
def halving(monkeypatch):
    """The registration, made when called: the rule (the mechanism's module does it at import), the MECHANISMS
    entry and its registry entry (mechanisms.REGISTRY: its stage)."""
    return lambda: _register(monkeypatch)


def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(derived.RULES, "halve", _halve)
    monkeypatch.setitem(derived.SLICEABLE, "halve", (True,))
    monkeypatch.setattr(derived, "MAP_RULES", derived.MAP_RULES | {"halve"})
    monkeypatch.setattr(derived_blocks, "CHAIN", derived.MAP_RULES)
    monkeypatch.setattr(score_steps, "MECHANISMS", (*score_steps.MECHANISMS, Halving()))
    halved = Registration("halve", __name__, lambda config, scale, site: (StageStep("halved", "× ½", "mask"),))
    monkeypatch.setattr(mechanisms, "REGISTRY", (*mechanisms.REGISTRY, halved))


def test_the_steps_are_the_registrys_mechanisms():
    """score_steps.MECHANISMS is the torch-free registry's list, loaded from each entry's module, in order."""
    assert [m.name for m in score_steps.MECHANISMS] == [entry.name for entry in mechanisms.REGISTRY]


def test_the_mechanisms_config_checks_run_from_the_registry():
    """ModelConfig.problems reads each mechanism's checks from the registry (a broken field is reported)."""
    assert any("attn_softcap" in p for p in ModelConfig(attn_softcap=-1.0).problems())
    assert any("rel_key_terms" in p for p in ModelConfig(rel_key_terms="nope", arch="encoder-only").problems())
    bare = ModelConfig(arch="encoder-only")
    with_table = ModelConfig(arch="encoder-only", rel_key_terms="key", rel_key_span=256)
    assert with_table.parameter_count() - bare.parameter_count() == bare.n_encoder_layers * 511 * bare.d_head


def test_register_rule_makes_a_map_rule_the_blocks_read():
    register("test_identity_map", lambda x: x.clone(), (True,), map_rule=True)
    try:
        assert "test_identity_map" in derived_blocks.CHAIN and derived.SLICEABLE["test_identity_map"] == (True,)
    finally:
        derived.RULES.pop("test_identity_map")
        derived.SLICEABLE.pop("test_identity_map")
        derived.MAP_RULES.discard("test_identity_map")


def test_a_sites_steps_follow_the_config():
    entries = [step.entry for step in score_steps.site_steps(ModelConfig())]
    assert entries == ["scaled", "masked"]
    capped = [step.entry for step in score_steps.site_steps(ModelConfig(attn_softcap=30.0))]
    assert capped == ["scaled", "capped", "masked"]
    alibi = score_steps.site_steps(ModelConfig(position_bias="alibi", positional="none"))
    assert [step.entry for step in score_steps.active(alibi, RunKey(True, 8, True))] == ["scaled", "biased", "masked"]
    assert [step.entry for step in score_steps.active(alibi, RunKey(True, 8, False))] == ["scaled", "masked"]
    assert not score_steps.fusable(score_steps.site_steps(ModelConfig(attn_softcap=30.0)))


def test_every_registered_steps_rule_is_a_rule_the_trace_can_compute():
    config = ModelConfig(attn_softcap=30.0, position_bias="alibi", positional="none")
    for step in score_steps.site_steps(config):
        assert step.rule in derived.RULES and step.rule in derived_blocks.CHAIN, step.entry


@pytest.mark.parametrize("arch", ["decoder-only", "encoder-decoder"])
def test_a_mechanism_of_one_module_and_one_registration_runs_end_to_end(halving, arch):
    model = build_tiny_model(arch)
    base = model.module  # built before the registration: the plain model
    halving()
    model.module = Transformer(model.config)  # built after it: every site halves; the same weights
    model.module.load_state_dict(base.state_dict())
    trace = model.trace(SRC, TGT)
    site = trace.sites()[0]
    entry = trace.entries[f"{site}.halved"]
    assert isinstance(entry, Derived) and entry.rule == "halve" and entry.inputs == (f"{site}.scaled",)
    assert trace.entries[f"{site}.masked"].inputs[0] == f"{site}.halved"
    # derived on read = what the forward computed: an eager recording of the same run
    ids = {k: trace.device_value(f"{s}.ids")[None] for k, s in (("src", "src"), ("tgt", "tgt")) if f"{s}.ids" in trace}
    rec = Recorder(True, eager=True)
    with torch.inference_mode():
        model.module(ids.get("src"), ids.get("tgt"), options=trace.options, rec=rec)
    eager = finished(rec, model.config, trace.options)
    assert torch.equal(trace[f"{site}.halved"], eager[f"{site}.halved"])
    assert torch.equal(trace[f"{site}.halved"], trace[f"{site}.scaled"] * 0.5)
    # block by block (a long map's read) the same numbers
    small = derived_blocks.BLOCK_BYTES
    derived_blocks.BLOCK_BYTES = 16
    try:
        assert torch.equal(derived_blocks.heads_value(trace, f"{site}.weights"), trace[f"{site}.weights"])
    finally:
        derived_blocks.BLOCK_BYTES = small
    # the plain model's weights are not these: its softmax reads the scaled scores, not their half
    plain = LiveModel(base, model.src_tokenizer, model.tgt_tokenizer).trace(SRC, TGT)
    assert f"{site}.halved" not in plain
    assert torch.equal(plain[f"{site}.scaled"], trace[f"{site}.scaled"])
    assert not torch.allclose(plain[f"{site}.weights"], trace[f"{site}.weights"])
    # the unrecorded path takes the step too: the same logits as the recorded run
    with torch.inference_mode():
        fast = model.module(ids.get("src"), ids.get("tgt"), options=trace.options, rec=Recorder(False))
    assert torch.allclose(fast[0], trace["logits"], atol=1e-5)
    # the stage list shows it before the mask
    kinds = [stage.kind for stage in stages_for(trace) if stage.site == site]
    assert kinds.index("halved") == kinds.index("mask") - 1
    # the budget still bounds the trace
    S = trace["src.ids"].shape[0] if "src.ids" in trace else 0
    T = trace["tgt.ids"].shape[0] if "tgt.ids" in trace else 0
    assert trace.stored_bytes() <= estimate_trace_bytes(model.config, RunOptions(), S, T)
