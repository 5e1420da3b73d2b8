"""A model folder's generation_config.json as the sampling defaults, each with its source, and a seeded
LiveModel.generate against transformers' own generate(do_sample=True) after torch.manual_seed (issue 35)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.engine.options import RunOptions
from attnlab.engine.sampling import GENERATION_KEY, sources, with_model_defaults
from tests.support.hf_cache_files import tiny_gpt2

PROMPT = [5, 17, 3, 88, 42, 7, 9, 61]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("generation") / "gpt2"
    tiny_gpt2().save_pretrained(str(folder), safe_serialization=True)
    return folder


@pytest.fixture(scope="module")
def plain(base: Path, tmp_path_factory: pytest.TempPathFactory) -> attnlab.LiveModel:
    return attnlab.load(saved(base, tmp_path_factory.mktemp("plain"), None))


def saved(base: Path, tmp_path: Path, generation: dict | None) -> Path:
    folder = tmp_path / "gpt2"
    shutil.copytree(base, folder)
    target = folder / "generation_config.json"
    if generation is None:
        target.unlink(missing_ok=True)
    else:
        target.write_text(json.dumps(generation))
    return folder


def test_the_folders_values_become_the_defaults_and_say_where_they_came_from(base: Path, tmp_path: Path) -> None:
    model = attnlab.load(saved(base, tmp_path, {"do_sample": True, "temperature": 0.6, "top_p": 0.9}))
    options = with_model_defaults(RunOptions(), model.metadata)
    assert (options.sample, options.temperature, options.top_k, options.top_p) == (True, 0.6, 50, 0.9)
    said = {f: s for f, _v, s in sources(options, model.metadata[GENERATION_KEY])}
    assert said == {
        "sample": "generation_config.json (do_sample)",
        "temperature": "generation_config.json (temperature)",
        "top_k": "default",
        "top_p": "generation_config.json (top_p)",
        "seed": "default",
    }
    said = {f: s for f, _v, s in sources(options.replace(top_k=5), model.metadata[GENERATION_KEY])}
    assert said["top_k"] == "you"


def test_without_the_file_the_defaults_are_greedy(base: Path, tmp_path: Path) -> None:
    model = attnlab.load(saved(base, tmp_path, None))
    assert with_model_defaults(RunOptions(), model.metadata) == RunOptions()


def test_a_bad_value_is_skipped_with_a_notice_and_the_model_opens(base: Path, tmp_path: Path) -> None:
    model = attnlab.load(saved(base, tmp_path, {"do_sample": True, "top_p": 7, "top_k": "many"}))
    options = with_model_defaults(RunOptions(), model.metadata)
    assert (options.sample, options.top_p, options.top_k) == (True, 1.0, 50)
    said = " ".join(model.metadata.get("notices", []))
    assert "top_p" in said and "top_k" in said


@pytest.mark.parametrize("t,k,p,seed", [(1.0, 50, 1.0, 0), (1.5, 0, 0.7, 123)])
def test_seeded_generate_draws_the_tokens_transformers_draws(plain: attnlab.LiveModel, t, k, p, seed) -> None:
    hf = tiny_gpt2()
    torch.manual_seed(seed)
    out = hf.generate(
        torch.tensor([PROMPT]),
        do_sample=True,
        temperature=t,
        top_k=k,
        top_p=p,
        max_new_tokens=8,
        pad_token_id=0,
        attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
    )
    theirs = [int(i) for i in out[0, len(PROMPT) :]]
    model = plain
    options = RunOptions(sample=True, temperature=t, top_k=k, top_p=p, seed=seed, record=False)
    runs = [list(model.generate(" ".join(map(str, PROMPT)), max_new_tokens=8, options=options)) for _ in range(2)]
    ours = [[int(s.info["next_id"]) for s in steps] for steps in runs]
    assert ours[0] == ours[1]  # the same seed, the same tokens
    assert ours[0][: len(theirs)] == theirs  # transformers stops after its eos (id 0)


def test_an_encoder_decoder_draws_the_tokens_transformers_draws(tmp_path: Path) -> None:
    """A tiny Marian (tests/support/hf_tiny.py): the decoder starts from decoder_start_token_id, typed as an id
    (the folder has no tokenizer). transformers forces </s> at the last step (forced_eos_token_id), so the
    tokens before it are compared."""
    from tests.support import hf_tiny

    hf, cfg = hf_tiny.marian()
    hf.save_pretrained(str(tmp_path / "marian"), safe_serialization=True)
    model = attnlab.load(tmp_path / "marian")
    src, start = [*PROMPT[:6], cfg["eos_token_id"]], cfg["decoder_start_token_id"]
    options = RunOptions(sample=True, temperature=1.3, top_k=30, top_p=0.95, seed=8, record=False)
    steps = model.generate(" ".join(map(str, src)), prefix=str(start), max_new_tokens=5, options=options)
    ours = [int(s.info["next_id"]) for s in steps]
    torch.manual_seed(8)
    out = hf.generate(
        torch.tensor([src]),
        decoder_input_ids=torch.tensor([[start]]),
        do_sample=True,
        temperature=1.3,
        top_k=30,
        top_p=0.95,
        max_new_tokens=5,
    )
    theirs = [int(i) for i in out[0, 1:-1]]  # after the start token, before the forced </s>
    assert len(theirs) >= 3 and ours[: len(theirs)] == theirs
