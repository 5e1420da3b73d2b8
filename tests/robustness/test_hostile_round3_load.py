"""Issue 38, the load side tried as an attacker would (tests/support/hostile_round3*.py, hostile_hub.py): every
cache and adapter case refused in one line in a memory-limited child, and one test per defect the cases found
(each failed before its fix): `attnlab get` writing outside its staging folder for a commit hash that is a path,
filling the disk from an endless body, holding an endless API answer in memory, and storing a pickle or a lying
header as model.safetensors; a revision '../..' read outside refs/; NaN or infinite LoRA alpha and weights run
as numbers; GGUF blocks past block_count silently left out."""

from __future__ import annotations

import json
import math

import pytest

from attnlab.checkpoints import CheckpointError, load_checkpoint
from attnlab.checkpoints.hub_get import GetRefused
from tests.support import hostile_files as h
from tests.support.hostile_hub import get_from
from tests.support.hostile_round3 import adapter_cases, cache_cases


def everything_under(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize(
    ("trick", "words"),
    [
        ("hub-commit-is-a-path", "did not say which commit"),
        ("hub-endless-body", "sent more than the"),
        ("hub-negative-size", "sent more than the"),
        ("hub-pickle-as-safetensors", "is not a whole safetensors file"),
        ("hub-json-as-safetensors", "the file is truncated"),
        ("hub-info-endless", "answered more than"),
    ],
)
def test_a_lying_hub_is_refused_in_one_line_and_nothing_is_left(tmp_path, trick, words):
    with pytest.raises(GetRefused) as caught:
        get_from(trick, str(tmp_path))
    message = str(caught.value)
    assert words in message and "\n" not in message, message
    assert everything_under(tmp_path) == set()  # no cache, no staging folder, nothing beside it


def test_an_honest_hub_still_downloads(tmp_path):
    assert get_from("hub-sibling-dotdot", str(tmp_path)).startswith("downloaded to cache/models--acme--tiny/")


def test_a_revision_that_is_a_path_is_not_read(tmp_path, monkeypatch):
    case = cache_cases(tmp_path)["cache-revision-dotdot"]
    monkeypatch.setenv("HF_HUB_CACHE", case.env["HF_HUB_CACHE"])
    with pytest.raises(CheckpointError, match="is not a revision of acme/tiny"):
        load_checkpoint(case.spec)


@pytest.mark.parametrize("case", ["adapter-alpha-nan", "adapter-alpha-infinite", "adapter-nan-weights"])
def test_nan_or_infinite_lora_numbers_are_refused(tmp_path, case):
    spec = adapter_cases(tmp_path)[case].spec
    settings = json.loads((tmp_path / case / "adapter" / "adapter_config.json").read_text())
    assert case == "adapter-nan-weights" or not math.isfinite(settings["lora_alpha"])  # JSON's NaN / Infinity
    with pytest.raises(CheckpointError, match="finite number|NaN or infinite") as caught:
        load_checkpoint(spec)
    assert "\n" not in str(caught.value)


def test_a_gguf_block_past_block_count_is_refused(tmp_path):
    import numpy as np

    from tests.support.gguf_tiny import write_gguf
    from tests.support.hostile_round3_gguf import rewrite

    valid = write_gguf(tmp_path, "llama", "F32")
    assert load_checkpoint(valid).config.n_decoder_layers == 2
    extra = {"blk.9.attn_q.weight": np.zeros((256, 256), np.float32)}  # the tiny Llama's width (gguf_tiny.HIDDEN)
    with pytest.raises(CheckpointError, match="does not have: blk.9.attn_q.weight"):
        load_checkpoint(rewrite(valid, tmp_path / "extra.gguf", tensors=extra))


def test_every_cache_and_adapter_case_is_one_line_in_bounds(tmp_path):
    """All of them in ONE child under the address-space limit (a crash is its signal, a hang its timeout)."""
    cases = cache_cases(tmp_path) | adapter_cases(tmp_path)
    given = {n: [c.spec, c.env, c.expect] for n, c in cases.items()}
    outcome = h.run_limited(f"""
        import os
        from attnlab.checkpoints import load_checkpoint
        result = {{}}
        for name, (spec, env, expect) in {given!r}.items():
            os.environ.pop("HF_HUB_CACHE", None)
            os.environ.update(env)
            begun = time.perf_counter()
            try:
                load_checkpoint(spec)
                got = ["ok", ""]
            except BaseException as e:
                got = [type(e).__name__, str(e)]
            result[name] = {{"result": got, "seconds": time.perf_counter() - begun, "peak_mb": peak_mb()}}
    """)
    assert outcome["returncode"] == 0 and outcome["result"], outcome["stderr"]
    for name, got in outcome["result"].items():
        if cases[name].expect == "loaded":
            assert got["result"] == ["ok", ""], (name, got)
            continue
        kind, message = got["result"]
        assert kind in ("CheckpointError", "NotCached"), (name, kind, message[:300])
        assert "\n" not in message and "Traceback" not in message, (name, message)
        assert got["seconds"] < h.SECONDS and got["peak_mb"] < h.PEAK_RSS_MB, (name, got)
