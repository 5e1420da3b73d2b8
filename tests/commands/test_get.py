"""`attnlab get` against a stand-in Hub on 127.0.0.1 (tests/support/stand_in_hub.py): the cache ends as
huggingface_hub's own snapshot_download lays it out; pickle-only and code-only repositories are refused before
any byte is written; a dropped connection, a cancel, a 401, a 404, a refused connection and a full disk leave the
cache as it was and say so in one line."""

import json
import os
import socket
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
import torch
from huggingface_hub import file_download, scan_cache_dir, snapshot_download

from attnlab.checkpoints import hub_get, load_checkpoint
from attnlab.cli import main
from tests.families.test_hf_models import gpt2
from tests.support.stand_in_hub import StandInHub, StandInRepo

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"
LEFT_BEHIND = {"pytorch_model.bin", "modeling_extra.py", "README.md"}


def tiny_repo(tmp_path: Path) -> StandInRepo:
    """A tiny GPT-2 written by transformers (config, safetensors, tokenizer) plus what `get` must leave behind:
    a pickle of the same weights, a Python file, a README."""
    folder = tmp_path / "built"
    folder.mkdir()
    torch.manual_seed(0)
    gpt2(folder).save_pretrained(folder)  # config.json, generation_config.json, model.safetensors
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04 not a real pickle")
    (folder / "modeling_extra.py").write_text("raise SystemExit('never run')\n")
    (folder / "README.md").write_text("# tiny\n")
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    config = json.loads(files["config.json"])
    return StandInRepo(files, config={"model_type": config["model_type"]}, sha=COMMIT)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with StandInHub() as hub:
        hub.repos["acme/tiny"] = tiny_repo(tmp_path)
        # loopback only: huggingface_hub fetches its agent-harness registry from its default endpoint by itself
        # (utils/_detect_agent.py, best effort); keep that off the network
        monkeypatch.setattr(huggingface_hub.utils._detect_agent, "_fetch_registry", lambda: None)
        yield hub


def tree(folder: Path) -> dict[str, tuple[str, object]]:
    """Every entry under `folder`: ('link', target), ('file', bytes) or ('dir', None), by relative path."""
    out: dict[str, tuple[str, object]] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel] = ("file", p.read_bytes())
        else:
            out[rel] = ("dir", None)
    return out


def scanned(cache: Path) -> set:
    """What huggingface_hub's cache scan sees: repos, refs, revisions and their files with sizes and blobs."""
    info = scan_cache_dir(cache)
    assert not info.warnings and not info.incomplete_files
    return {
        (repo.repo_id, rev.commit_hash, tuple(sorted(rev.refs)), f.file_name, f.size_on_disk, f.blob_path.name)
        for repo in info.repos
        for rev in repo.revisions
        for f in rev.files
    }


def get(hub: StandInHub, text: str, cache: Path, **kwargs) -> Path:
    return hub_get.download(hub_get.plan(text, endpoint=hub.url), cache_dir=cache, endpoint=hub.url, **kwargs)


@pytest.mark.parametrize("links", [True, False], ids=["links", "copies"])
def test_the_cache_is_laid_out_as_snapshot_download_lays_it_out(hub, tmp_path, monkeypatch, links):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_SYMLINKS", not links)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    the_plan = hub_get.plan("acme/tiny", endpoint=hub.url)
    assert set(the_plan.files) == set(hub.repos["acme/tiny"].files) - LEFT_BEHIND
    seen: list[tuple[int, int]] = []
    snapshot = hub_get.download(the_plan, cache_dir=ours, endpoint=hub.url, progress=lambda d, t: seen.append((d, t)))
    reference = snapshot_download("acme/tiny", cache_dir=theirs, endpoint=hub.url, allow_patterns=list(the_plan.files))
    assert snapshot.relative_to(ours) == Path(reference).relative_to(theirs)
    assert tree(ours / "models--acme--tiny") == tree(theirs / "models--acme--tiny")
    assert scanned(ours) == scanned(theirs) and len(scanned(ours)) == len(the_plan.files)
    assert not list(ours.rglob("*.incomplete")) and not list((ours / ".locks").glob("attnlab-get-*"))
    assert seen and seen[-1] == (the_plan.total, the_plan.total)  # every byte reported
    assert not any(
        path.endswith(("/pytorch_model.bin", "/modeling_extra.py", "/README.md")) for _, path in hub.requests
    )


def test_a_downloaded_snapshot_opens_and_agrees_with_transformers(hub, tmp_path, monkeypatch):
    import transformers

    snapshot = get(hub, "acme/tiny", tmp_path / "cache")  # links into blobs/, as huggingface_hub lays them
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    by_id = load_checkpoint("acme/tiny")  # what `attnlab get` says to open
    model = load_checkpoint(snapshot)
    assert torch.equal(by_id.trace("the cat sat on the mat")["logits"], model.trace("the cat sat on the mat")["logits"])
    reference = transformers.GPT2LMHeadModel.from_pretrained(str(snapshot)).eval()
    trace = model.trace("the cat sat on the mat")
    ids = trace["tgt.ids"].unsqueeze(0) if "tgt.ids" in trace else trace["src.ids"].unsqueeze(0)
    with torch.no_grad():
        expected = reference(ids).logits[0]
    assert torch.allclose(trace["logits"], expected, atol=1e-4)


def untouched(cache: Path) -> None:
    assert not cache.exists() or not any(cache.iterdir()), sorted(p.name for p in cache.rglob("*"))


def downloads(hub: StandInHub) -> list[str]:
    return [path for _, path in hub.requests if "/resolve/" in path]


def test_a_pickle_only_repository_is_refused_before_any_byte_is_written(hub, tmp_path):
    files = {"config.json": b'{"model_type": "gpt2"}', "pytorch_model.bin": b"\x80\x04.", "tokenizer.json": b"{}"}
    hub.repos["acme/pickled"] = StandInRepo(files, config={"model_type": "gpt2"})
    with pytest.raises(hub_get.GetRefused, match=r"only as PyTorch pickles \(pytorch_model.bin\)"):
        get(hub, "acme/pickled", tmp_path / "cache")
    untouched(tmp_path / "cache")
    assert downloads(hub) == []


@pytest.mark.parametrize("reported", [True, False], ids=["api-config", "config-file"])
def test_a_code_only_repository_is_refused_and_the_cache_is_untouched(hub, tmp_path, reported):
    config = {"model_type": "acme", "auto_map": {"AutoModelForCausalLM": "modeling_acme.AcmeForCausalLM"}}
    files = {
        "config.json": json.dumps(config).encode(),
        "modeling_acme.py": b"import os\n",
        "model.safetensors": hub.repos["acme/tiny"].files["model.safetensors"],
    }
    hub.repos["acme/coded"] = StandInRepo(files, config=config if reported else None)
    with pytest.raises(hub_get.GetRefused, match="needs its own Python code") as caught:
        get(hub, "acme/coded", tmp_path / "cache")
    assert "\n" not in str(caught.value)
    untouched(tmp_path / "cache")
    assert not any(p.endswith(".py") for p in downloads(hub))
    if reported:  # the Hub said so: nothing was asked for but the listing
        assert downloads(hub) == []


def test_a_connection_dropped_mid_file_leaves_nothing(hub, tmp_path, monkeypatch):
    # huggingface_hub waits a second before each of its five resumes; the stand-in refuses them at once
    monkeypatch.setattr(file_download, "time", SimpleNamespace(sleep=lambda s: None))
    hub.repos["acme/tiny"].drop = "model.safetensors"
    cache = tmp_path / "cache"
    with pytest.raises(hub_get.GetRefused, match="connection dropped") as caught:
        get(hub, "acme/tiny", cache)
    assert "\n" not in str(caught.value)
    untouched(cache)
    assert sum(path.endswith("/model.safetensors") for path in downloads(hub)) > 1  # it did try to resume


def test_a_cancel_leaves_nothing(hub, tmp_path):
    cancel = __import__("threading").Event()
    with pytest.raises(hub_get.Cancelled):
        get(hub, "acme/tiny", tmp_path / "cache", progress=lambda done, total: cancel.set(), cancel=cancel)
    untouched(tmp_path / "cache")


def test_a_disk_too_small_is_refused_before_writing(hub, tmp_path, monkeypatch):
    monkeypatch.setattr(hub_get.shutil, "disk_usage", lambda path: SimpleNamespace(total=10, used=10, free=10))
    with pytest.raises(hub_get.GetRefused, match="only 10 bytes is free"):
        get(hub, "acme/tiny", tmp_path / "cache")
    untouched(tmp_path / "cache")
    assert downloads(hub) == []


def run_cli(args, monkeypatch, capsys, endpoint: str) -> tuple[int, str, str]:
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    code = main(["get", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("status", "words"), [(401, "answered 401 (unauthorized)"), (404, "there is no model acme/tiny")]
)
def test_401_and_404_are_one_line(hub, tmp_path, monkeypatch, capsys, status, words):
    hub.repos["acme/tiny"].status = status
    code, out, err = run_cli(["acme/tiny", "--cache-dir", str(tmp_path / "c")], monkeypatch, capsys, hub.url)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err, err
    untouched(tmp_path / "c")


def test_a_refused_connection_is_one_line(tmp_path, monkeypatch, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = run_cli(
        ["acme/tiny", "--cache-dir", str(tmp_path / "c")], monkeypatch, capsys, f"http://127.0.0.1:{port}"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "connection was refused" in err, err


def test_the_cli_downloads_and_says_how_to_open_it(hub, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "c"
    code, out, err = run_cli(["acme/tiny", "--cache-dir", str(cache)], monkeypatch, capsys, hub.url)
    snapshot = cache / "models--acme--tiny" / "snapshots" / COMMIT
    assert code == 0 and f"attnlab {snapshot}" in out, (out, err)  # another cache: by its folder
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "default"))
    code, out, err = run_cli(["acme/tiny"], monkeypatch, capsys, hub.url)
    assert code == 0 and "Open it:  attnlab acme/tiny\n" in out, (out, err)  # the cache attnlab reads: by id
    assert {p.name for p in snapshot.iterdir()} == set(hub.repos["acme/tiny"].files) - LEFT_BEHIND


@pytest.mark.parametrize("text", ["tiny", "a/b/c", "acme/bad name", ""])
def test_a_bad_id_is_one_line(tmp_path, monkeypatch, capsys, text):
    code, _, err = run_cli([text, "--cache-dir", str(tmp_path / "c")], monkeypatch, capsys, "http://127.0.0.1:9")
    assert code == 2 and "is not a model id" in err and len(err.strip().splitlines()) == 1, err


def test_ctrl_c_stops_the_cli_and_leaves_nothing(hub, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    hub.repos["acme/tiny"].delay = 1.0  # each file waits a second: Ctrl+C comes while they do
    cache = tmp_path / "cache"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from attnlab.cli import main; sys.exit(main())", "get", "acme/tiny"]
        + ["--cache-dir", str(cache)],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "HF_ENDPOINT": hub.url, "PYTHONPATH": str(root)},
    )
    try:
        deadline = time.monotonic() + 30
        while not any("/resolve/" in path and method == "GET" for method, path in hub.requests):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "attnlab get: interrupted; nothing was written to the cache"
    assert "Saved" not in out
    untouched(cache)
