"""The adapter-strength option (issue 35.1) follows the option table: the `attnlab trace` flag, the lesson key,
the banner's reason, the control's availability; an adapter whose base is a model id in the Hugging Face cache."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import attnlab
from attnlab.engine import option_rules
from attnlab.engine.option_spec import RunFacts
from attnlab.engine.options import RunOptions
from attnlab.present import facts, lessons
from tests.support.hf_tiny import IDS
from tests.support.lora_tiny import set_base, write_adapter

pytest.importorskip("peft")

LORA = {"r": 4, "lora_alpha": 8, "target_modules": ["c_attn"], "fan_in_fan_out": True}


@pytest.fixture(scope="module")
def adapted(tmp_path_factory: pytest.TempPathFactory):
    _base, adapter, _merged = write_adapter(tmp_path_factory.mktemp("lora"), "gpt2", **LORA)
    return attnlab.load(str(adapter))


def test_the_flag_sets_the_strength():
    parser = argparse.ArgumentParser()
    option_rules.add_option_arguments(parser)
    assert option_rules.options_from_args(parser.parse_args(["--adapter-strength", "0"])).adapter_strength == 0.0
    assert option_rules.options_from_args(parser.parse_args([])).adapter_strength == 1.0


def test_the_lesson_key_reads_and_refuses():
    assert lessons.options_with(RunOptions(), {"adapter_strength": 0}).adapter_strength == 0.0
    _spec, key = option_rules.lesson_keys()["adapter_strength"]
    assert key.problem(2.5) is None and key.problem(7) is not None
    assert RunOptions(adapter_strength=7.0).problems(attnlab.engine.config.ModelConfig()) != []


def test_strengths_other_than_base_and_fine_tune_are_in_the_banner(adapted):
    for s, departs in ((0.0, False), (1.0, False), (0.5, True), (2.0, True)):
        trace = adapted.trace(tgt=IDS, options=RunOptions(adapter_strength=s))
        reasons = option_rules.departures_by_field(trace.config, trace.options, RunFacts()).get("adapter_strength", [])
        assert bool(reasons) == departs
        if departs:
            assert f"strength {s:g}" in facts.untrained_banner(trace)


def test_the_control_is_unavailable_without_an_adapter(adapted, tiny_model):
    spec = option_rules.spec_of("adapter_strength")
    (control,) = spec.controls
    assert control.unavailable is not None
    assert control.unavailable(tiny_model().config, RunOptions()) is not None
    assert control.unavailable(adapted.config, RunOptions()) is None


def test_the_base_is_found_by_its_id_in_the_cache(tmp_path: Path, monkeypatch):
    from tests.support.hf_cache_files import add_revision, folder_files

    base, adapter, _merged = write_adapter(tmp_path, "gpt2", **LORA)
    cache = tmp_path / "hub"
    add_revision(cache, "org/tiny-gpt2", folder_files(base))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    set_base(adapter, "org/tiny-gpt2")
    model = attnlab.load(str(adapter))
    assert model.adapter is not None and "tiny-gpt2" in model.metadata["adapter"]["base"]
    set_base(adapter, "org/not-cached")
    with pytest.raises(Exception, match="not-cached"):
        attnlab.load(str(adapter))


def test_an_adapter_is_opened_by_its_id_in_the_cache(tmp_path: Path, monkeypatch):
    from tests.support.hf_cache_files import add_revision, folder_files

    base, adapter, _merged = write_adapter(tmp_path, "gpt2", **LORA)
    cache = tmp_path / "hub"
    add_revision(cache, "org/tiny-gpt2", folder_files(base))
    set_base(adapter, "org/tiny-gpt2")
    add_revision(cache, "org/tiny-gpt2-lora", folder_files(adapter))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    model = attnlab.load("org/tiny-gpt2-lora")
    assert model.adapter is not None and model.config.adapted_from == "dec.0"
