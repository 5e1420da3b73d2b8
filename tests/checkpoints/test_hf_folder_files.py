"""Reading a Hugging Face-style folder: one file, shards with their index, pytorch_model.bin; damaged shards
get one readable CheckpointError; a .bin whose pickle tries to run code is refused and runs nothing.

The conversion of each model_type belongs to attnlab.checkpoints.hf (tests/families/test_hf_models.py checks it
against transformers); here a stand-in converter for a made-up model_type "nanogpt-test" (nanoGPT's tensor
names, converted by attnlab's nanoGPT reader) exercises the folder machinery on its own."""

from __future__ import annotations

import json
import os
import pickle
import types

import pytest
import torch
from safetensors.torch import save_file

from attnlab.checkpoints import CheckpointError, hf_folder, load_checkpoint
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.nanogpt import convert_state, nanogpt_config
from tests.support.nanogpt_reference import train_py_checkpoint

ARGS = dict(n_layer=2, n_head=2, n_embd=16, block_size=24, vocab_size=11, dropout=0.0, bias=True)
HF_CONFIG = {"model_type": "nanogpt-test", **ARGS}


def stand_in_api():
    def config_from_hf(hf_config):
        problems = Problems("config.json")
        config = nanogpt_config(hf_config, problems)
        if problems:
            raise ValueError(problems.items[0])
        return config

    def convert(hf_config, state):
        config = config_from_hf(hf_config)
        problems = Problems("weights")
        tensors = convert_state(state, config, problems)
        if problems:
            raise ValueError("; ".join(problems.items))
        return config, tensors, ["tie_output inferred: lm_head shares the token embedding"]

    return types.SimpleNamespace(
        SUPPORTED_MODEL_TYPES=("nanogpt-test",), config_from_hf=config_from_hf, convert=convert
    )


@pytest.fixture(autouse=True)
def converter(monkeypatch):
    monkeypatch.setattr(hf_folder, "hf_api", stand_in_api)


@pytest.fixture
def gpt_and_state():
    gpt, ckpt = train_py_checkpoint(ARGS, seed=4)
    state = {k: v.clone() for k, v in ckpt["model"].items() if k != "lm_head.weight"}  # safetensors: no sharing
    return gpt.eval(), state


def logits_of(gpt, ids):
    with torch.no_grad():
        return gpt(torch.tensor([ids]))[0]


def write_config(folder, **changes):
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**HF_CONFIG, **changes}))


def write_shards(folder, state, n=2):
    names = sorted(state)
    weight_map = {}
    for i in range(n):
        file = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        part = {k: state[k] for k in names[i::n]}
        save_file(part, str(folder / file))
        weight_map |= {k: file for k in part}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def test_single_file_sharded_and_bin_folders_give_the_same_logits(tmp_path, gpt_and_state):
    gpt, state = gpt_and_state
    expected = logits_of(gpt, [1, 5, 2])
    one, shards, binary = tmp_path / "one", tmp_path / "shards", tmp_path / "bin"
    for folder in (one, shards, binary):
        write_config(folder)
    save_file(state, str(one / "model.safetensors"))
    write_shards(shards, state, n=3)
    torch.save(state, binary / "pytorch_model.bin")
    for folder in (one, shards, binary):
        model = load_checkpoint(folder)
        t = model.trace("#1 #5 #2")  # no tokenizer files: ids as numbers, nothing prepended
        assert t["tgt.ids"].tolist() == [1, 5, 2]
        assert torch.allclose(t["logits"], expected, atol=1e-5)
        assert any("no tokenizer files" in n for n in model.metadata["notices"])
    settings = load_checkpoint(one / "config.json").metadata["settings"]
    assert settings["d_model"]["source"] == "config.json (n_embd)"
    assert settings["tie_output"]["source"].startswith("inferred: ")
    assert settings["positional"]["source"] == "inferred from model_type nanogpt-test"


def error_of(path) -> str:
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    return str(info.value)


def test_damaged_shards_are_all_listed_in_one_error(tmp_path, gpt_and_state):
    _, state = gpt_and_state
    write_config(tmp_path)
    write_shards(tmp_path, state, n=3)
    first, second, third = sorted(tmp_path.glob("model-*.safetensors"))
    first.write_bytes(first.read_bytes()[:-10])  # truncated
    second.write_bytes(second.read_bytes() + b"\0" * 64)  # oversized
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    index["weight_map"]["transformer.extra.weight"] = third.name  # the shard does not hold it
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    msg = error_of(tmp_path)
    assert "3 problems" in msg
    assert f"{first.name}: the file is truncated" in msg
    assert f"{second.name}: the file is 64 bytes longer" in msg
    assert f"{third.name} does not match the index: missing transformer.extra.weight" in msg


def test_missing_shard_and_mismatched_shapes(tmp_path, gpt_and_state):
    _, state = gpt_and_state
    write_config(tmp_path)
    write_shards(tmp_path, state, n=2)
    sorted(tmp_path.glob("model-*.safetensors"))[1].unlink()
    assert "names shard files that are not in the folder" in error_of(tmp_path)
    other = tmp_path / "other"
    write_config(other, n_embd=32)  # the config says 32, the weights are 16 wide
    save_file(state, str(other / "model.safetensors"))
    msg = error_of(other)
    assert "wrong shape" in msg and "tgt_embed.weight: expected [11, 32] got [11, 16]" in msg


def test_malicious_pytorch_model_bin_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    write_config(tmp_path)
    with open(tmp_path / "pytorch_model.bin", "wb") as f:
        pickle.dump({"transformer.wte.weight": Evil()}, f, protocol=2)
    msg = error_of(tmp_path)
    assert "pytorch_model.bin: refused to load" in msg and "posix.mkdir" in msg
    assert not marker.exists()


def test_unknown_model_type_and_folders_without_weights(tmp_path):
    write_config(tmp_path, model_type="mamba")
    msg = error_of(tmp_path)
    assert "'mamba'" in msg and "nanogpt-test" in msg
    write_config(tmp_path)
    assert "no weights" in error_of(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no config.json, ckpt.pt" in error_of(empty)
