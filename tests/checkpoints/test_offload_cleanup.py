"""A model spread over memory and disk whose disk layers cannot be written (a full disk; issue 38.4): the
`attnlab-offload-*` folder and the layers written so far are removed, every time, and the refusal names the folder
written to and why (it blamed the checkpoint, and left one folder per retry)."""

from __future__ import annotations

import errno
import tempfile

import pytest
import torch

pytest.importorskip("accelerate")

import accelerate.utils

import attnlab
from attnlab.checkpoints import CheckpointError
from attnlab.engine import memory
from attnlab.engine.offload import layer_names, module_bytes
from tests.support import hf_tiny


@pytest.fixture
def spread_folder(tmp_path, monkeypatch):
    """A Llama folder opened under a host memory that holds one of its two layers: the other goes to disk."""
    model, _config = hf_tiny.llama()  # 2 layers
    folder = tmp_path / "llama"
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    whole = attnlab.load(folder)
    layers = layer_names(whole.module)
    weights = sum(p.numel() * p.element_size() for p in whole.module.checkpoint_tensors().values())
    resident = weights - sum(module_bytes(whole.module.get_submodule(n)) for n in layers)
    one_layer = module_bytes(whole.module.get_submodule(layers[0]))
    monkeypatch.setattr(memory, "host_available", lambda: int((resident + 1.2 * one_layer) / 0.8))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # where mkdtemp puts the offload folder (TMPDIR)
    return folder, tmp


def test_a_full_disk_leaves_nothing_behind_and_names_the_folder(spread_folder, monkeypatch):
    folder, tmp = spread_folder
    real = accelerate.utils.offload_weight
    written: list[str] = []

    def fills_the_disk(weight, name, offload_folder, index=None):  # the first layer's first tensor is written
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(offload_folder)
        return real(weight, name, offload_folder, index)

    monkeypatch.setattr(accelerate.utils, "offload_weight", fills_the_disk)
    for _retry in range(2):
        written.clear()
        with pytest.raises(CheckpointError) as refused:
            attnlab.load(folder)
        message = str(refused.value)
        assert written and written[0].startswith(str(tmp / "attnlab-offload-")), written
        assert f"could not write the offload folder {written[0]}: No space left on device" in message, message
        assert "\n" not in message
        assert list(tmp.iterdir()) == []  # the folder and the tensor written to it are gone, retry after retry


def test_a_temporary_folder_that_cannot_be_made_is_named(spread_folder, monkeypatch):
    folder, tmp = spread_folder

    def no_room(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkdtemp", no_room)
    with pytest.raises(CheckpointError, match=f"could not make an offload folder in {tmp}: No space left on device"):
        attnlab.load(folder)
    assert list(tmp.iterdir()) == []


def test_a_spread_model_that_is_dropped_removes_its_folder(spread_folder):
    folder, tmp = spread_folder
    spread = attnlab.load(folder)
    assert spread.placement is not None and spread.placement.offloaded
    assert len(list(tmp.iterdir())) == 1  # the disk layer's folder, while the model lives
    del spread
    import gc

    gc.collect()
    assert list(tmp.iterdir()) == []
