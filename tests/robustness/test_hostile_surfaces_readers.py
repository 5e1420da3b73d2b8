"""Issue 27, the file side, in process: the linear JSON depth scan (against a reference walk, and its time on
hostile megabytes), the bounded reader (FIFOs, sizes, confinement: nothing outside the folder is opened),
the pickle scan's depth through the memo, Marian's ids, snapshot losses and lessons."""

from __future__ import annotations

import builtins
import io
import json
import os
import pickle
import random
import time

import pytest

from attnlab import bounded_read, limits
from attnlab.bounded_read import FileRefused, confined, read_bytes, read_json
from attnlab.checkpoints.errors import Problems
from tests.support import hostile_files as h


# ---- the JSON depth scan --------------------------------------------------------------------------------
def reference_depth(value) -> int:
    """The nesting of a parsed JSON value, walked iteratively."""
    deepest, work = 0, [(value, 1)]
    while work:
        v, d = work.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            work.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def random_json(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(["a[b", 'q"}{', "\\", "]]", 3, None, 1.5, "é{"])
    if rng.random() < 0.5:
        return [random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}[": random_json(rng, depth - 1) for i in range(rng.randint(0, 3))}


def test_the_depth_scan_agrees_with_a_walk_of_the_parsed_value():
    rng = random.Random(3)
    for _ in range(300):
        value = random_json(rng, rng.randint(0, 12))
        assert limits.json_depth(json.dumps(value)) == reference_depth(value)


@pytest.mark.parametrize("megabytes", [1, 10])
@pytest.mark.parametrize(
    "pattern", ['"\\', '"', "[", "[]", '["a",', '"' + "\\" * 7, "[" * 60 + "]" * 59, '{"a":"\\"[",']
)
def test_the_depth_scan_is_linear_on_hostile_text(megabytes, pattern):
    """Before: a regex that restarts at every quote took minutes on 1 MB of '"\\'."""
    text = pattern * (megabytes * 1_000_000 // len(pattern))
    begun = time.perf_counter()
    with pytest.raises(ValueError) as info:
        limits.loads_bounded(text, "the file", 100_000_000)
    assert time.perf_counter() - begun < 1.0 * megabytes + 2, pattern
    assert "RecursionError" not in str(info.value)


def test_deep_json_is_refused_before_parsing_not_by_a_recursion_error(monkeypatch):
    def no_parse(*_args, **_kwargs):
        raise AssertionError("json.loads ran on text the scan should have refused")

    monkeypatch.setattr(limits.json, "loads", no_parse)
    with pytest.raises(limits.LimitError, match="more than 64 levels deep"):
        limits.loads_bounded("[" * 65 + "]" * 65, "the file", 1000)
    with pytest.raises(limits.LimitError, match="values"):
        limits.loads_bounded("[" + "0," * 100 + "0]", "the file", 10_000, max_items=50)


# ---- the bounded reader ---------------------------------------------------------------------------------
def test_a_fifo_is_refused_without_being_opened(tmp_path, monkeypatch):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    with pytest.raises(FileRefused, match=r"a FIFO \(named pipe\), not a regular file"):
        read_json(fifo, "the config", 1000)
    assert opened == []
    with pytest.raises(FileRefused, match="a folder, not a regular file"):
        read_bytes(tmp_path, "the config", 1000)


def test_a_sparse_file_is_refused_from_stat_alone(tmp_path, monkeypatch):
    big = h.sparse_file(tmp_path / "vocab.json")
    monkeypatch.setattr(os, "read", lambda *_: pytest.fail("the file was read"))
    with pytest.raises(FileRefused, match="3,221,225,472 bytes; attnlab reads at most 64,000,000"):
        read_bytes(big, "the vocabulary", bounded_read.MAX_VOCAB_BYTES)


def test_confinement_refuses_every_way_out(tmp_path):
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("x")
    (folder / "inside.txt").write_text("y")
    (folder / "link-out").symlink_to(tmp_path / "secret.txt")
    (folder / "dir-out").symlink_to(tmp_path)
    (folder / "link-in").symlink_to(folder / "inside.txt")
    for name in (
        "../secret.txt",
        str(tmp_path / "secret.txt"),
        "sub/../../secret.txt",
        "link-out",
        "dir-out/secret.txt",
    ):
        with pytest.raises(FileRefused, match="outside the model folder"):
            confined(folder, name, "the shard")
    assert confined(folder, "link-in", "the shard") == folder / "link-in"
    assert confined(folder, "sub/x.safetensors", "the shard") == folder / "sub" / "x.safetensors"


def test_an_hf_folder_opens_nothing_outside_itself(tmp_path, monkeypatch):
    """Every open (Python's and the tokenizers library's paths) stays inside the folder, even though the
    index, the tokenizer files and meta.pkl all point out of it."""
    from attnlab.checkpoints import load_checkpoint
    from attnlab.checkpoints.errors import CheckpointError

    outside = tmp_path / "outside"
    outside.mkdir()
    h.gpt2_folder(outside)
    (outside / "tokenizer.json").write_text("{}")
    folder = h.gpt2_folder(tmp_path / "model", state={})
    shard = h.gpt2_state()
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {k: "../outside/model.safetensors" for k in shard}})
    )
    (folder / "tokenizer.json").symlink_to(outside / "tokenizer.json")
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(os.fspath(p)) or real_os_open(p, *a, **k))
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: opened.append(os.fspath(p)) or real_open(p, *a, **k))
    with pytest.raises(CheckpointError, match="outside the model folder"):
        load_checkpoint(folder)
    assert opened and not [p for p in opened if str(outside) in os.path.realpath(p)], opened


# ---- the pickle scan ------------------------------------------------------------------------------------
def value_depth(value) -> int:
    deepest, work, seen = 0, [(value, 1)], set()
    while work:
        v, d = work.pop()
        deepest = max(deepest, d)
        if isinstance(v, (list, tuple)) and id(v) not in seen:
            seen.add(id(v))
            work.extend((x, d + 1) for x in v)
    return deepest


def test_a_stored_list_filled_later_deepens_what_already_holds_it():
    """Before: the depth of (((L,),),) was taken when L was empty, so filling L later went unseen."""
    from attnlab.checkpoints.pickle_scan import pickle_problem

    half = limits.MAX_PICKLE_DEPTH // 2 + 4
    data = h.stale_memo_pickle(half)
    assert value_depth(pickle.loads(data)) > limits.MAX_PICKLE_DEPTH  # pickle itself builds it that deep
    assert "levels deep" in pickle_problem(io.BytesIO(data))
    shallow = h.stale_memo_pickle(limits.MAX_PICKLE_DEPTH // 2 - 4)
    assert value_depth(pickle.loads(shallow)) < limits.MAX_PICKLE_DEPTH and pickle_problem(io.BytesIO(shallow)) == ""


def test_the_scan_reads_the_member_torch_load_reads(tmp_path):
    import zipfile

    from attnlab.checkpoints.pickle_scan import pickle_member

    path = tmp_path / "x.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("top/version", "3")
        z.writestr("top/data.pkl", b"\x80\x02}.")
    with zipfile.ZipFile(path) as z:
        member, refused = pickle_member(z.infolist())
    assert refused == "" and member is not None and member.filename == "top/data.pkl"


def test_meta_pkl_gets_the_pickle_limits():
    from attnlab.checkpoints.plain_pickle import load_plain_pickle

    with pytest.raises(ValueError, match="levels deep"):
        load_plain_pickle(h.deep_tuple_key_pickle(10_000))
    assert load_plain_pickle(pickle.dumps({"itos": {0: "a"}})) == {"itos": {0: "a"}}


# ---- Marian ids, snapshot losses, lessons ---------------------------------------------------------------
@pytest.mark.parametrize(
    "vocab, config, phrase",
    [
        ({"a": 0, "b": -100}, {"vocab_size": 10}, "outside 0 … 9"),
        ({"a": 0, "b": 300_000_000}, {"vocab_size": 10}, "300,000,000"),
        ({"a": 0, "b": 0}, {"vocab_size": 10}, "same id"),
        ({"a": 0}, {"vocab_size": 10, "decoder_start_token_id": 10**12}, "decoder_start_token_id"),
    ],
)
def test_marian_ids_are_checked_before_any_table_is_built(tmp_path, vocab, config, phrase, monkeypatch):
    from attnlab.checkpoints import tokenizer_files

    monkeypatch.setattr(tokenizer_files, "SentencePieceTokenizer", lambda *a: pytest.fail("a table was built"))
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    for name in ("source.spm", "target.spm"):
        (tmp_path / name).write_bytes(b"x")
    problems = Problems(tmp_path)
    src, tgt, _ = tokenizer_files.folder_tokenizers(tmp_path, {"model_type": "marian", **config}, problems)
    assert src is None and tgt is None and phrase in problems.items[0]


def test_a_loss_too_large_for_a_float_is_left_out():
    from attnlab.checkpoints.snapshots import parse_losses

    problems = Problems("x")
    losses = parse_losses('{"0": 1e999, "1": ' + "9" * 400 + ', "2": 1.5, "3": "x"}', problems)
    assert losses == {2: 1.5} and not problems


def test_a_lesson_that_is_a_fifo_or_nested_deep_is_one_lesson_error(tmp_path):
    from attnlab.present.lessons import LessonError, parse_lesson, read_lesson

    fifo = tmp_path / "lesson.toml"
    os.mkfifo(fifo)
    with pytest.raises(LessonError, match="not a regular file"):
        read_lesson(fifo)  # before: blocked forever
    with pytest.raises(LessonError, match="levels deep"):
        parse_lesson('src = "a"\nx = ' + "[" * 5000 + "]" * 5000, "deep.toml")


def test_a_tiny_additive_file_claiming_a_huge_model_is_refused_before_allocating(tmp_path):
    import resource

    from safetensors.torch import save_file

    from attnlab.checkpoints.additive import FORMAT, load_additive
    from attnlab.checkpoints.errors import CheckpointError
    from attnlab.engine.additive import AdditiveConfig, AdditiveSeq2Seq

    small = AdditiveConfig(vocab_size=len(h.TOK.vocab), d_embed=4, d_hidden=4, d_attn=4)
    tensors = {k: v.contiguous() for k, v in AdditiveSeq2Seq(small).state_dict().items()}
    huge = {**small.to_dict(), "vocab_size": 1_000_000, "d_embed": 16_384}  # ~36 GB of weights once built
    meta = {"format": FORMAT, "config": json.dumps(huge), "tokenizer": h.TOK.to_json()}
    save_file(tensors, str(tmp_path / "a.safetensors"), metadata=meta)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CheckpointError, match="not the ones its config describes"):
        load_additive(tmp_path / "a.safetensors")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # kB: nothing big was allocated
    meta["config"] = json.dumps(small.to_dict())
    save_file(tensors, str(tmp_path / "b.safetensors"), metadata=meta)
    assert load_additive(tmp_path / "b.safetensors").module.cfg == small  # the control opens
