"""Models in the Hugging Face cache by id, offline (issue 34): caches built here exactly as huggingface_hub
lays them out (tests/support/hf_cache_files.py), checked with huggingface_hub's own scan_cache_dir; the numbers
against transformers' from_pretrained on the same ids, offline."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import transformers
from huggingface_hub import constants, scan_cache_dir, snapshot_download

from attnlab.checkpoints import CheckpointError, load_checkpoint
from attnlab.checkpoints.hf_cache import cached_repo_of, model_spec, resolve_cached
from attnlab.cli import main
from tests.support import hf_tiny
from tests.support.hf_cache_files import add_revision, saved_gpt2

REPO = "acme/tiny-gpt2"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return saved_gpt2(tmp_path_factory.mktemp("saved"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache that huggingface_hub (and so attnlab) reads, offline."""
    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    return hub


def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a socket was opened: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def reference(cache, spec: str):
    """transformers' own model for `spec`, from the same cache, offline."""
    repo_id, _, revision = spec.partition("@")
    model = transformers.GPT2LMHeadModel.from_pretrained(
        repo_id, revision=revision or None, cache_dir=str(cache), local_files_only=True, attn_implementation="eager"
    )
    with torch.no_grad():
        return model.eval()(torch.tensor([hf_tiny.IDS]), output_attentions=True)


def assert_agrees(model, out):
    trace = model.trace(None, hf_tiny.IDS)
    assert (trace["logits"] - out.logits[0]).abs().max() <= 1e-4
    for i, a in enumerate(out.attentions):
        assert (trace[f"dec.{i}.self.weights"] - a[0]).abs().max() <= 1e-4


def test_the_built_cache_is_what_huggingface_hub_reads(cache, files):
    snapshot = add_revision(cache, REPO, files)
    info = scan_cache_dir(cache)
    assert not info.warnings
    (repo,) = info.repos
    (revision,) = repo.revisions
    assert (repo.repo_id, revision.refs, revision.snapshot_path) == (REPO, frozenset({"main"}), snapshot)
    assert {f.file_name for f in revision.files} == set(files)
    assert all(f.blob_path.parent == repo.repo_path / "blobs" for f in revision.files)
    assert snapshot_download(REPO, cache_dir=cache, local_files_only=True) == str(snapshot)


@pytest.mark.parametrize("copies", [False, True], ids=["links", "copies"])
def test_the_id_and_its_snapshot_folder_agree_with_transformers_offline(cache, files, monkeypatch, copies):
    snapshot = add_revision(cache, REPO, files, copies=copies)
    out = reference(cache, REPO)
    no_network(monkeypatch)
    by_id = load_checkpoint(REPO)
    assert by_id.name == REPO
    assert_agrees(by_id, out)
    assert_agrees(load_checkpoint(snapshot), out)


def test_a_revision_is_a_branch_or_a_commit(cache, files, tmp_path, monkeypatch):
    main_files = saved_gpt2(tmp_path, seed=3)
    add_revision(cache, REPO, main_files)
    old = add_revision(cache, REPO, files, refs=("step1000",))
    no_network(monkeypatch)
    assert resolve_cached(f"{REPO}@step1000") == old
    assert resolve_cached(f"{REPO}@{old.name}") == old
    assert cached_repo_of(old) == (REPO, old.name)
    assert_agrees(load_checkpoint(f"{REPO}@step1000"), reference(cache, f"{REPO}@step1000"))
    assert load_checkpoint(f"{REPO}@step1000").name == f"{REPO}@{old.name[:8]}"


def test_an_id_not_in_the_cache_is_one_line(cache, monkeypatch):
    no_network(monkeypatch)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint("acme/x")
    assert str(e.value) == f"acme/x is not in the Hugging Face cache at {cache}; `attnlab get acme/x` downloads it"


def test_a_revision_not_in_the_cache_names_those_that_are(cache, files):
    add_revision(cache, REPO, files)
    with pytest.raises(CheckpointError, match=r"not at revision 'step9' \(it holds: main\)") as e:
        load_checkpoint(f"{REPO}@step9")
    assert "\n" not in str(e.value)


def test_a_path_that_exists_is_a_path(cache, files, tmp_path, monkeypatch):
    add_revision(cache, REPO, files)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "acme" / "tiny-gpt2").mkdir(parents=True)
    assert model_spec(REPO) is None
    with pytest.raises(CheckpointError, match="no config.json"):
        load_checkpoint(REPO)  # the empty folder, not the cached model
    assert model_spec("acme/other@main") == ("acme/other", "main")
    assert model_spec("not an id") is None


def test_the_commands_take_an_id(cache, files, tmp_path, monkeypatch, capsys):
    add_revision(cache, REPO, files)
    no_network(monkeypatch)
    out = tmp_path / "t.npz"
    assert main(["trace", "--checkpoint", REPO, "--src", "#5 #17 #3", "--out", str(out)]) == 0
    assert out.is_file()
    capsys.readouterr()
    assert main(["info", REPO]) == 0
    assert capsys.readouterr().out.startswith(f"{REPO}: decoder-only")
    assert main(["trace", "--checkpoint", "acme/x", "--src", "a", "--out", str(out)]) == 2
    assert "acme/x is not in the Hugging Face cache" in capsys.readouterr().err


def test_a_refs_file_naming_a_folder_outside_the_repository_is_refused(cache, files, tmp_path):
    add_revision(cache, REPO, files)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (cache / "models--acme--tiny-gpt2" / "refs" / "main").write_text("../../../elsewhere")
    with pytest.raises(CheckpointError, match="outside it"):
        load_checkpoint(REPO)


def test_huggingface_hub_is_not_imported_for_a_path(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; from attnlab.checkpoints.hf_cache import model_spec; "
        f"model_spec({str(tmp_path)!r}); model_spec('a file.safetensors'); "
        "print('huggingface_hub' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout.strip() == "False"


def test_the_stage_check_reads_an_ids_config_without_its_weights(cache, files):
    from attnlab.checkpoints.config_only import config_without_weights

    add_revision(cache, REPO, files)
    assert config_without_weights(REPO) == load_checkpoint(REPO).config
    assert config_without_weights("acme/not-cached") is None


def test_hf_home_places_the_cache_as_huggingface_hub_places_it(files, tmp_path):
    """A fresh process with only HF_HOME set: the cache is HF_HOME/hub, as huggingface_hub.constants say."""
    import subprocess
    import sys

    add_revision(tmp_path / "home" / "hub", REPO, files)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")}
    env |= {"HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    code = (
        "import sys; from huggingface_hub import constants; from attnlab.cli import main; "
        "print(constants.HF_HUB_CACHE); sys.exit(main(['models']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == str(tmp_path / "home" / "hub")
    assert lines[2].split()[0] == REPO and lines[2].endswith("opens")
