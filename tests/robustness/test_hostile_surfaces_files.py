"""Issue 27, the file side: hostile Hugging Face folders, shard indexes, tokenizer files, nanoGPT checkpoints
with meta.pkl, .pt/.bin pickles built to slip past the scan, and files that are not what they say. Every case
is built here (sparse files for the size cases) and opened in ONE memory-limited child process
(hostile_files.load_in_child): a crash would show as the child's signal, a hang as its timeout, an
allocation as its peak memory. Each must end in one CheckpointError line."""

from __future__ import annotations

import json
import os
import pickle

import pytest
import torch
from safetensors.torch import save_file

from attnlab import limits
from tests.support import hostile_files as h
from tests.support.nanogpt_reference import train_py_checkpoint

NANO_ARGS = dict(n_layer=1, n_head=2, n_embd=16, block_size=16, vocab_size=11, dropout=0.0, bias=True)
DEEP = 1_000_000  # levels: far past the C stack when hashed


def nanogpt_folder(folder, meta: bytes | None = None, **model_args):
    folder.mkdir(parents=True, exist_ok=True)
    _gpt, ckpt = train_py_checkpoint(NANO_ARGS, seed=1)
    ckpt["model_args"] = {**ckpt["model_args"], **model_args}
    torch.save(ckpt, folder / "ckpt.pt")
    if meta is not None:
        (folder / "meta.pkl").write_bytes(meta)
    return folder / "ckpt.pt"


def bin_folder(folder, pickle_bytes: bytes | None = None, state: dict | None = None):
    """A GPT-2 folder whose weights are pytorch_model.bin: a real torch.save of `state`, or a forged archive."""
    h.gpt2_folder(folder, state={})
    if pickle_bytes is not None:
        h.decoy_archive(folder / "pytorch_model.bin", pickle_bytes)
    else:
        torch.save(state, folder / "pytorch_model.bin")
    return folder


def build_cases(d) -> dict:
    cases = {}
    cases["valid-folder"] = h.gpt2_folder(d / "valid")  # the control: the same builder, nothing hostile
    cases["decoy-pt"] = h.decoy_archive(d / "decoy.pt", h.deep_tuple_key_pickle(DEEP))
    cases["decoy-bin"] = bin_folder(d / "decoy-bin", h.deep_tuple_key_pickle(DEEP))
    cases["meta-deep-key"] = nanogpt_folder(d / "meta-deep", meta=h.deep_tuple_key_pickle(DEEP))
    huge_memo = b"\x80\x02}r\xff\xff\xff\x7f."  # LONG_BINPUT 2^31-1: the C unpickler sizes its memo to it
    cases["meta-huge-memo"] = nanogpt_folder(d / "meta-memo", meta=huge_memo)
    sparse_meta = nanogpt_folder(d / "meta-sparse")
    h.sparse_file(sparse_meta.parent / "meta.pkl", head=b"\x80\x02")
    cases["meta-sparse"] = sparse_meta
    cases["nano-1e9-layers"] = nanogpt_folder(d / "layers", n_layer=1_000_000_000)
    cases["nano-1e12-block"] = nanogpt_folder(d / "block", block_size=10**12)
    cases["nano-negative"] = nanogpt_folder(d / "negative", n_embd=-16)
    zero = h.gpt2_state()
    zero["transformer.wte.weight"] = torch.zeros(1).expand(1 << 26, 16)  # 4 bytes posing as 4 GB
    cases["zero-stride-bin"] = bin_folder(d / "zero-bin", state=zero)
    base = torch.zeros(1 << 16)
    overlap = {**h.gpt2_state(), **{f"extra.{i}": base[: 1 << 16] for i in range(300)}}
    cases["overlapping-bin"] = bin_folder(d / "overlap-bin", state=overlap)
    nano_zero = d / "nano-zero"
    nano_zero.mkdir()
    _gpt, ckpt = train_py_checkpoint(NANO_ARGS, seed=1)
    ckpt["model"]["transformer.h.0.attn.c_attn.weight"] = torch.zeros(1).expand(3 << 24, 16)
    torch.save(ckpt, nano_zero / "ckpt.pt")
    cases["zero-stride-nanogpt"] = nano_zero / "ckpt.pt"
    sparse_config = d / "sparse-config"
    sparse_config.mkdir()
    h.sparse_file(sparse_config / "config.json")
    cases["sparse-config"] = sparse_config
    index_sparse = h.gpt2_folder(d / "sparse-index", state={})
    h.sparse_file(index_sparse / "model.safetensors.index.json")
    cases["sparse-index"] = index_sparse
    tok_sparse = h.gpt2_folder(d / "sparse-tokenizer")
    h.sparse_file(tok_sparse / "tokenizer.json")
    cases["sparse-tokenizer"] = tok_sparse
    cases.update(outside_cases(d))
    nested = h.gpt2_folder(d / "nested-config", state={})
    (nested / "config.json").write_text('{"model_type": "gpt2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    cases["nested-config"] = nested
    hostile = h.gpt2_folder(d / "quadratic-tokenizer")  # the old depth scan took minutes on this
    (hostile / "tokenizer.json").write_text('"\\' * 500_000)
    cases["quadratic-tokenizer"] = hostile
    cases["quadratic-header"] = h.raw_safetensors(d / "quadratic.safetensors", "{" + '"\\' * 500_000)
    int8 = {k: (v * 100).to(torch.int8) for k, v in h.gpt2_state().items()}
    cases["int8-weights"] = h.gpt2_folder(d / "int8", state=int8)
    return cases


def outside_cases(d) -> dict:
    """Shard indexes naming files outside the folder; the outside file is a valid shard, so following the
    name would load."""
    cases = {}
    shard = h.gpt2_state()
    save_file(shard, str(d / "outside.safetensors"))
    for name, target in (
        ("index-dotdot", "../outside.safetensors"),
        ("index-absolute", str(d / "outside.safetensors")),
        ("index-symlink", "model-00001-of-00001.safetensors"),
    ):
        folder = h.gpt2_folder(d / name, state={})
        index = {"metadata": {}, "weight_map": {k: target for k in shard}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        if name == "index-symlink":
            (folder / target).symlink_to(d / "outside.safetensors")
        cases[name] = folder
    torch.save(shard, d / "outside.bin")
    for name, weights, target in (  # the weights themselves: a link out of the folder, or a FIFO (issue 34)
        ("weights-symlink", "model.safetensors", d / "outside.safetensors"),
        ("bin-symlink", "pytorch_model.bin", d / "outside.bin"),
        ("weights-fifo", "model.safetensors", None),
    ):
        folder = h.gpt2_folder(d / name, state={})
        if target is None:
            os.mkfifo(folder / weights)
        else:
            (folder / weights).symlink_to(target)
        cases[name] = folder
    return cases


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    d = tmp_path_factory.mktemp("surfaces")
    return h.load_in_child(build_cases(d))


def refused(outcome, *phrases):
    message = h.assert_refused_in_bounds(outcome, *phrases)
    assert "\n" not in message, message  # one line
    for noise in ("RecursionError", "AssertionError", "MemoryError", "unexpected", "Traceback", "panicked"):
        assert noise not in message, message
    return message


def test_the_control_folder_loads(outcomes):
    assert outcomes["valid-folder"]["result"] == ["ok", ""]


@pytest.mark.parametrize("case", ["decoy-pt", "decoy-bin"])
def test_a_decoy_pickle_cannot_hide_the_one_torch_load_reads(outcomes, case):
    """Before: the scan read archive/xdata.pkl, torch.load read archive/data.pkl and died of SIGSEGV."""
    refused(outcomes[case], "2 pickles", "holds one, data.pkl")


def test_a_deep_key_in_meta_pkl_is_refused_before_unpickling(outcomes):
    refused(outcomes["meta-deep-key"], "meta.pkl", f"more than {limits.MAX_PICKLE_DEPTH} levels deep")


def test_a_huge_memo_slot_in_meta_pkl_is_refused(outcomes):
    refused(outcomes["meta-huge-memo"], "meta.pkl", "memo slot 2,147,483,647")


def test_a_sparse_3_gb_meta_pkl_is_refused_unread(outcomes):
    refused(outcomes["meta-sparse"], "meta.pkl", "3,221,225,472 bytes")


@pytest.mark.parametrize(
    "case, phrases",
    [
        ("nano-1e9-layers", ("model_args", "1,000,000,000")),
        ("nano-1e12-block", ("model_args", "max_len")),
        ("nano-negative", ("model_args sizes must be at least 1", "n_embd -16")),
    ],
)
def test_nanogpt_model_args_out_of_range_are_one_line(outcomes, case, phrases):
    refused(outcomes[case], *phrases)


@pytest.mark.parametrize("case", ["zero-stride-bin", "zero-stride-nanogpt"])
def test_zero_stride_tensors_are_refused_in_every_container(outcomes, case):
    refused(outcomes[case], "zero strides")


def test_tensors_overlapping_one_storage_are_refused(outcomes):
    refused(outcomes["overlapping-bin"], "overlap")


@pytest.mark.parametrize(
    "case, name",
    [("sparse-config", "config.json"), ("sparse-index", "index.json"), ("sparse-tokenizer", "tokenizer.json")],
)
def test_a_sparse_3_gb_structured_file_is_refused_from_its_size(outcomes, case, name):
    refused(outcomes[case], name, "3,221,225,472 bytes; attnlab reads at most")
    assert outcomes[case]["seconds"] < 5, outcomes[case]


@pytest.mark.parametrize("case", ["index-dotdot", "index-absolute", "index-symlink"])
def test_a_shard_index_cannot_point_outside_the_folder(outcomes, case):
    refused(outcomes[case], "outside the model folder")


@pytest.mark.parametrize("case", ["weights-symlink", "bin-symlink"])
def test_a_weights_file_linked_from_outside_the_folder_is_refused(outcomes, case):
    refused(outcomes[case], "is a link to a file outside the model folder")


def test_a_fifo_for_weights_is_refused_unopened(outcomes):
    refused(outcomes["weights-fifo"], "model.safetensors", "a FIFO (named pipe), not a regular file")


def test_a_deeply_nested_config_json_is_refused(outcomes):
    refused(outcomes["nested-config"], "config.json", f"more than {limits.MAX_JSON_DEPTH} levels deep")


def test_a_tokenizer_file_that_hung_the_depth_scan_is_answered_at_once(outcomes):
    outcome = outcomes["quadratic-tokenizer"]
    refused(outcome, "tokenizer")
    assert outcome["seconds"] < 5, outcome


def test_a_header_that_hung_the_depth_scan_is_answered_at_once(outcomes):
    """Before: 1 MB of '"\\' held the old regex depth scan for minutes."""
    outcome = outcomes["quadratic-header"]
    refused(outcome, "the header is unreadable")
    assert outcome["seconds"] < 5, outcome


def test_integer_weights_are_refused_not_cast(outcomes):
    refused(outcomes["int8-weights"], "int8", "floating-point weights only")


# ---- the CLI: exit 2 and one line -----------------------------------------------------------------------
@pytest.mark.parametrize("which", ["decoy", "outside"])
def test_the_cli_refuses_in_one_line_with_exit_2(tmp_path, which):
    if which == "decoy":
        path = h.decoy_archive(tmp_path / "decoy.pt", h.deep_tuple_key_pickle(DEEP))
    else:
        path = outside_cases(tmp_path)["index-dotdot"]
    proc = h.cli_in_child("info", str(path))
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])  # not -11 (SIGSEGV)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab info: Cannot load"), proc.stderr[-2000:]


def test_train_with_zero_steps_exits_2(tmp_path):
    proc = h.cli_in_child("train", "--model", "translation", "--steps", "0", "--out-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "--steps must be at least 1" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_pickle_module_agrees_a_deep_key_is_deep():
    """The builder is what it says (checked with pickle itself, shallow enough not to crash)."""
    value = pickle.loads(h.deep_tuple_key_pickle(50))
    key = next(iter(value))
    depth = 0
    while isinstance(key, tuple) and key:
        key, depth = key[0], depth + 1
    assert depth == 50
