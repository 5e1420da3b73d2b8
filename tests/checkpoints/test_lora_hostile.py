"""Hostile LoRA adapter folders: each is refused in one line naming what is wrong, before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

import attnlab
from attnlab.checkpoints.errors import CheckpointError
from tests.support.lora_tiny import set_base, write_adapter

pytest.importorskip("peft")

LORA = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    base, adapter, _merged = write_adapter(tmp_path, "llama", **LORA)
    return base, adapter


def _refusal(path: Path) -> str:
    with pytest.raises(CheckpointError) as caught:
        attnlab.load(str(path))
    message = str(caught.value)
    assert "\n" not in message
    return message


def _rewrite_tensors(adapter: Path, change) -> None:
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    save_file(change(tensors), str(adapter / "adapter_model.safetensors"))


def test_rank_that_disagrees_with_config(folders: tuple[Path, Path]) -> None:
    _base, adapter = folders
    _rewrite_tensors(adapter, lambda t: {k: (v[:2].contiguous() if "lora_A" in k else v) for k, v in t.items()})
    assert "rank r = 4" in _refusal(adapter)


def test_shape_that_disagrees_with_base(folders: tuple[Path, Path]) -> None:
    _base, adapter = folders
    _rewrite_tensors(adapter, lambda t: {k: (v[:, :-1].contiguous() if "lora_A" in k else v) for k, v in t.items()})
    assert "the base's weight is" in _refusal(adapter)


def test_target_the_base_lacks(folders: tuple[Path, Path]) -> None:
    _base, adapter = folders
    _rewrite_tensors(adapter, lambda t: {k.replace("q_proj", "qq_proj"): v for k, v in t.items()})
    assert "which the base model lacks" in _refusal(adapter)


def test_missing_base(folders: tuple[Path, Path], tmp_path: Path) -> None:
    _base, adapter = folders
    set_base(adapter, str(tmp_path / "nowhere"))
    assert "nowhere" in _refusal(adapter)
    set_base(adapter, None)
    assert "names no base model" in _refusal(adapter)


def test_base_that_is_an_adapter(folders: tuple[Path, Path], tmp_path: Path) -> None:
    _base, adapter = folders
    _b2, second = write_adapter(
        tmp_path / "two", "gpt2", r=2, lora_alpha=2, target_modules=["c_attn"], fan_in_fan_out=True
    )[:2]
    set_base(second, str(adapter))
    assert "is itself a LoRA adapter" in _refusal(second)


def test_pickled_weights_are_never_read(folders: tuple[Path, Path]) -> None:
    _base, adapter = folders
    (adapter / "adapter_model.safetensors").rename(adapter / "adapter_model.bin")
    assert "never unpickles" in _refusal(adapter)


def test_dora_and_bad_rank_settings(folders: tuple[Path, Path]) -> None:
    _base, adapter = folders
    path = adapter / "adapter_config.json"
    settings = json.loads(path.read_text())
    path.write_text(json.dumps({**settings, "use_dora": True}))
    assert "DoRA" in _refusal(adapter)
    path.write_text(json.dumps({**settings, "r": 0}))
    assert "rank r" in _refusal(adapter)
