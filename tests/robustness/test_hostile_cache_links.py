"""One rule for the links of a cached snapshot (issue 34): a file may lead into its own repository's blobs/,
nowhere else, weights included; a FIFO and '..' in a shard index are refused in one line, unopened."""

from __future__ import annotations

import json
import os

import pytest
from huggingface_hub import constants
from safetensors.torch import save_file

from attnlab.bounded_read import FileRefused, confined
from attnlab.checkpoints import CheckpointError, load_checkpoint
from tests.support import hostile_files as h
from tests.support.hf_cache_files import add_revision, blob_name

REPO = "acme/tiny"


def gpt2_files(d) -> dict[str, bytes]:
    folder = h.gpt2_folder(d / "plain")
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.fixture
def snapshot(tmp_path, monkeypatch):
    """A cached GPT-2 (hostile_files' tiny one) as huggingface_hub lays it out, and an outside file that is a
    valid model.safetensors too (following the link would load)."""
    hub = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    files = gpt2_files(tmp_path)
    save_file(h.gpt2_state(), str(tmp_path / "outside.safetensors"))
    return add_revision(hub, REPO, files)


def relink(path, target):
    path.unlink()
    path.symlink_to(target)


def refused_in_one_line(spec, *phrases):
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(spec)
    message = str(e.value)
    assert "\n" not in message and len(message) < 600, message
    for phrase in phrases:
        assert phrase in message, message
    return message


def test_the_control_snapshot_opens_by_folder_and_by_id(snapshot):
    assert load_checkpoint(snapshot).name == REPO
    assert load_checkpoint(REPO).name == REPO


@pytest.mark.parametrize("file", ["model.safetensors", "config.json"])
def test_a_link_leaving_the_repository_is_refused(snapshot, tmp_path, file):
    target = tmp_path / "outside.safetensors" if file == "model.safetensors" else tmp_path / "plain" / file
    relink(snapshot / file, target)
    refused_in_one_line(REPO, file, "outside the model folder")


def test_pytorch_model_bin_leaving_the_repository_is_refused(snapshot, tmp_path):
    import torch

    torch.save(h.gpt2_state(), tmp_path / "outside.bin")
    (snapshot / "model.safetensors").unlink()
    (snapshot / "pytorch_model.bin").symlink_to(tmp_path / "outside.bin")
    refused_in_one_line(snapshot, "pytorch_model.bin", "outside the model folder")


def test_a_link_into_another_repositorys_blobs_is_refused(snapshot, tmp_path):
    other = add_revision(snapshot.parents[2], "acme/other", gpt2_files(tmp_path))
    blob = os.readlink(other / "model.safetensors")  # ../../blobs/<sha256> of acme/other
    relink(snapshot / "model.safetensors", os.path.join("..", "..", "..", "models--acme--other", blob[6:]))
    assert (snapshot / "model.safetensors").resolve().parent == other.parents[1] / "blobs"
    refused_in_one_line(REPO, "model.safetensors", "outside the model folder")


def test_a_blobs_folder_that_is_a_link_counts_for_nothing(snapshot, tmp_path):
    blobs = snapshot.parents[1] / "blobs"
    moved = tmp_path / "moved-blobs"
    blobs.rename(moved)
    blobs.symlink_to(moved)
    refused_in_one_line(REPO, "config.json", "outside the model folder")


def test_a_fifo_for_the_weights_is_refused_unopened(snapshot):
    (snapshot / "model.safetensors").unlink()
    os.mkfifo(snapshot / "model.safetensors")
    refused_in_one_line(REPO, "model.safetensors", "a FIFO (named pipe)")


def test_dotdot_in_a_shard_index_is_refused(snapshot):
    blob = blob_name("model.safetensors", (snapshot / "model.safetensors").read_bytes())
    weights = h.gpt2_state()
    index = {"metadata": {}, "weight_map": {k: f"../../blobs/{blob}" for k in weights}}
    (snapshot / "model.safetensors.index.json").write_text(json.dumps(index))
    refused_in_one_line(REPO, "model.safetensors.index.json", "points outside the model folder")


def test_a_plain_folder_that_looks_like_a_cache_is_held_to_its_own_blobs(tmp_path):
    fake = tmp_path / "models--x--y" / "snapshots" / "abc"
    fake.mkdir(parents=True)
    (tmp_path / "models--x--y" / "blobs").mkdir()
    (fake / "secret").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "secret.txt").write_text("x")
    with pytest.raises(FileRefused, match="outside the model folder"):
        confined(fake, "secret", "secret")
    (tmp_path / "models--x--y" / "blobs" / "b").write_text("y")
    (fake / "ok").symlink_to("../../blobs/b")
    assert confined(fake, "ok", "ok") == fake / "ok"


def test_a_blob_in_huggingface_hubs_shared_store_is_read(snapshot, tmp_path):
    """huggingface_hub >= 2.4 keeps Xet files once per cache, <cache>/blobs/<2 hex>/<xet hash>, each repo blob a
    link to it (utils/_shared_blobs.py); a repo blob linking anywhere else is still refused."""
    _shared_blobs = pytest.importorskip("huggingface_hub.utils._shared_blobs")
    cache, blob = snapshot.parents[2], (snapshot / "model.safetensors").resolve()
    xet = "ab" + "0" * 62
    store = _shared_blobs.shared_blob_path(cache, xet)
    store.parent.mkdir(parents=True)
    (cache / "blobs" / _shared_blobs.SHARED_BLOBS_MARKER_NAME).write_text(
        f"{_shared_blobs.SHARED_BLOBS_LAYOUT_VERSION}\n"
    )
    blob.rename(store)
    blob.symlink_to(os.path.relpath(store, blob.parent))
    assert _shared_blobs.shared_blob_target(blob, cache) == store
    assert load_checkpoint(REPO).name == REPO
    relink(blob, tmp_path / "outside.safetensors")
    refused_in_one_line(REPO, "model.safetensors", "outside the model folder")


def test_a_shared_store_reached_through_a_link_counts_for_nothing(snapshot, tmp_path):
    """<cache>/blobs, or one of its prefix folders, linked to another store (the user's own cache, say) does
    not open that store's files."""
    _shared_blobs = pytest.importorskip("huggingface_hub.utils._shared_blobs")
    cache, blob = snapshot.parents[2], (snapshot / "model.safetensors").resolve()
    xet = "cd" + "1" * 62
    elsewhere = tmp_path / "other-cache-store"
    (elsewhere / xet[:2]).mkdir(parents=True)
    blob.rename(elsewhere / xet[:2] / xet)
    store = _shared_blobs.shared_blobs_dir(cache)
    store.mkdir()
    (store / _shared_blobs.SHARED_BLOBS_MARKER_NAME).write_text(f"{_shared_blobs.SHARED_BLOBS_LAYOUT_VERSION}\n")
    (store / xet[:2]).symlink_to(elsewhere / xet[:2])  # the prefix folder leads out of the store
    blob.symlink_to(os.path.relpath(_shared_blobs.shared_blob_path(cache, xet), blob.parent))
    assert _shared_blobs.shared_blob_target(blob, cache) is not None  # huggingface_hub's own check lets it by
    refused_in_one_line(REPO, "model.safetensors", "outside the model folder")
    store.rename(tmp_path / "old-store")
    store.symlink_to(elsewhere)  # the whole store a link
    refused_in_one_line(REPO, "model.safetensors", "outside the model folder")


def test_a_fifo_in_refs_is_refused_before_huggingface_hub_reads_it(snapshot):
    """huggingface_hub opens a refs/ file and reads it whole: a FIFO there would hang the open and the scan."""
    from attnlab.checkpoints.hf_cache_scan import cached_models

    main = snapshot.parents[1] / "refs" / "main"
    main.unlink()
    os.mkfifo(main)
    refused_in_one_line(REPO, "refs/main is not a commit hash")
    models, problems = cached_models()
    assert models == [] and "refs/main is not a commit hash" in problems[0]
