"""Hostile checkpoint files (issue 14): each is refused with one short CheckpointError, in a child process
under an address-space limit, in bounded time and memory; never a crash, a hang or a raw exception."""

import json
import os

import pytest
import torch

from attnlab import limits
from attnlab.checkpoints import CheckpointError, load_checkpoint
from tests.support.hostile_files import (
    TINY,
    assert_refused_in_bounds,
    deep_dict_pickle,
    deep_list_pickle,
    load_in_child,
    metadata_of,
    raw_safetensors,
    safetensors_with,
    tensors_of,
    tiny_model,
    torch_zip_with_pickle,
    zero_stride_pt,
    zip_bomb,
)


def with_config(tmp_path, name, **fields):
    """The tiny model's tensors, with config fields overridden in the metadata."""
    model = tiny_model()
    meta = metadata_of(model)
    meta["config"] = json.dumps(json.loads(meta["config"]) | fields)
    return safetensors_with(tmp_path / name, tensors_of(model), meta)


def nested_meta(tmp_path, name, key):
    model = tiny_model()
    meta = metadata_of(model)
    meta[key] = '{"a": ' + "[" * 20_000 + "]" * 20_000 + "}"
    return safetensors_with(tmp_path / name, tensors_of(model), meta)


def many_tensors(tmp_path, name):
    n = limits.MAX_TENSORS * 2
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(n)})
    return raw_safetensors(tmp_path / name, header)


def huge_header(tmp_path, name):
    path = tmp_path / name
    path.write_bytes((10**12).to_bytes(8, "little") + b"{}")
    return path


def legacy_deep(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(deep_list_pickle(20_000))  # the legacy torch.save format is a bare pickle stream
    return path


def long_name(tmp_path, name):
    model = tiny_model()
    tensors = tensors_of(model) | {"n" * 100_000: torch.zeros(1)}
    return safetensors_with(tmp_path / name, tensors, metadata_of(model))


BIG = [
    ("src_vocab_size", 2_000_000_000),
    ("max_len", 1_000_000_000),
    ("max_len", 5_000_000),
    ("d_ff", 100_000_000),
    ("n_encoder_layers", 10_000),
    ("d_model", 10**30),
]
LIARS = [
    ("src_vocab_size", 400_000, "src_embed.weight is"),
    ("d_model", 2048, "embed.weight is"),
    ("d_ff", 200_000, "encoder.0.ffn.lin1.weight is"),
    ("n_encoder_layers", 200, "the file has encoder layers 0 to 0"),
]
NESTED = [("config", "the config"), ("src_tokenizer", "the tokenizer"), ("metadata", "the 'metadata' entry")]


def hostile_files(d):
    files = {
        "deep-lists": torch_zip_with_pickle(d / "deep1.pt", deep_list_pickle(20_000)),
        "deep-dict-keys": torch_zip_with_pickle(d / "deep2.pt", deep_dict_pickle(20_000)),
        "deep-legacy": legacy_deep(d, "legacy.pt"),
        "zip-bomb": zip_bomb(d / "bomb.pt"),
        "zero-stride": zero_stride_pt(d / "stride.pt"),
        "many-tensors": many_tensors(d, "many.safetensors"),
        "huge-header": huge_header(d, "huge.safetensors"),
        "nested-header": raw_safetensors(d / "nested.safetensors", '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"),
        "long-string": with_config(d, "long.safetensors", arch="x" * 2_000_000),
        "long-name": long_name(d, "name.safetensors"),
        "position-table": with_config(d, "pos.safetensors", max_len=131_072, d_model=512, n_heads=4),
    }
    files |= {f"big-{f}-{v}": with_config(d, f"big{i}.safetensors", **{f: v}) for i, (f, v) in enumerate(BIG)}
    files |= {f"liar-{f}": with_config(d, f"liar{i}.safetensors", **{f: v}) for i, (f, v, _) in enumerate(LIARS)}
    files |= {f"nested-{k}": nested_meta(d, f"nested-{k}.safetensors", k) for k, _ in NESTED}
    return files


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """Every hostile file above, loaded in one child process under an address-space limit."""
    files = hostile_files(tmp_path_factory.mktemp("hostile"))
    assert all(p.stat().st_size < 3_000_000 for p in files.values())
    return load_in_child(files)


# ---- pickles ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["deep-lists", "deep-dict-keys"])
def test_a_deep_pickle_is_refused_before_torch_unpickles_it(refused, case):
    assert_refused_in_bounds(refused[case], "refused to load", f"more than {limits.MAX_PICKLE_DEPTH} levels")


def test_a_deep_legacy_pickle_is_refused_too(refused):
    assert_refused_in_bounds(refused["deep-legacy"], "refused to load", "levels deep")


def test_a_shallow_pickle_of_plain_data_still_reaches_torch(tmp_path):
    """The scan refuses depth, not content: a shallow non-dict gets torch's own answer, read as before."""
    path = torch_zip_with_pickle(tmp_path / "list.pt", deep_list_pickle(10))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert "levels deep" not in str(info.value)


def test_a_zip_bomb_is_refused_from_its_directory(refused):
    assert_refused_in_bounds(refused["zip-bomb"], "zip bomb", "20,000,")


def test_zero_stride_tensors_are_refused_before_anything_touches_them(refused):
    assert_refused_in_bounds(refused["zero-stride"], "src_embed.weight", "zero strides")


def test_a_real_pt_checkpoint_still_loads(tmp_path):
    model = tiny_model()
    path = tmp_path / "ok.pt"
    torch.save(
        {
            "state_dict": tensors_of(model),
            "config": json.loads(model.config.to_json()),
            "src_tokenizer": model.src_tokenizer.to_json(),
        },
        path,
    )
    loaded = load_checkpoint(path)
    assert all(torch.equal(loaded.module.checkpoint_tensors()[k], v) for k, v in tensors_of(model).items())


def test_a_real_legacy_format_pt_checkpoint_still_loads(tmp_path):
    """The scan reads the legacy format's pickles in a row (magic, protocol, sys info, object, keys)."""
    model = tiny_model()
    path = tmp_path / "legacy.pt"
    torch.save(
        {"state_dict": tensors_of(model), "config": json.loads(model.config.to_json())},
        path,
        _use_new_zipfile_serialization=False,
    )
    assert path.read_bytes()[:1] == b"\x80"
    loaded = load_checkpoint(path)
    assert all(torch.equal(loaded.module.checkpoint_tensors()[k], v) for k, v in tensors_of(model).items())


# ---- sizes before allocation -----------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", BIG)
def test_absurd_config_sizes_are_refused_by_name_before_building(refused, field, value):
    message = assert_refused_in_bounds(refused[f"big-{field}-{value}"], field, "more than attnlab handles")
    assert "alloc" not in message.lower()


@pytest.mark.parametrize("field, value, evidence", LIARS)
def test_sizes_the_file_contradicts_name_the_wrong_field(refused, field, value, evidence):
    message = assert_refused_in_bounds(refused[f"liar-{field}"], f"the config says {field} {value:,}", evidence)
    assert f"{field} should be" in message


def test_a_position_table_far_bigger_than_the_model_is_refused(refused, tmp_path):
    path = with_config(tmp_path, "pos.safetensors", max_len=131_072, d_model=16)
    assert load_checkpoint(path).config.max_len == 131_072  # 2 M cells: allowed
    assert_refused_in_bounds(refused["position-table"], "positions table")


# ---- safetensors headers ---------------------------------------------------------------------------------
def test_a_header_listing_too_many_tensors_is_refused_at_once(refused):
    n = limits.MAX_TENSORS * 2
    assert_refused_in_bounds(refused["many-tensors"], f"{n:,} tensors", f"at most {limits.MAX_TENSORS:,}")


def test_a_header_length_over_the_cap_is_refused_without_reading(refused):
    assert_refused_in_bounds(refused["huge-header"], "1,000,000,000,000 bytes long")


def test_deeply_nested_json_in_the_header_is_refused(refused):
    assert_refused_in_bounds(
        refused["nested-header"], f"the header nests more than {limits.MAX_JSON_DEPTH} levels deep"
    )


@pytest.mark.parametrize("key, what", NESTED)
def test_deeply_nested_json_in_the_metadata_is_refused(refused, key, what):
    assert_refused_in_bounds(refused[f"nested-{key}"], f"{what} nests more than {limits.MAX_JSON_DEPTH} levels deep")


def test_a_megabyte_string_in_the_config_gives_a_short_message(refused, tmp_path):
    message = assert_refused_in_bounds(refused["long-string"], "the config is 2,00")
    assert len(message) < 400
    path = with_config(tmp_path, "long2.safetensors", arch="y" * 50_000)  # under the config cap: quoted briefly
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "arch must be one of" in message and "…" in message and "(50,000 characters)" in message
    assert len(message) < 500


def test_a_long_tensor_name_is_refused_and_not_quoted_whole(refused):
    message = assert_refused_in_bounds(refused["long-name"], "100,000 characters")
    assert len(message) < 500


def test_metadata_notices_of_the_wrong_type_are_ignored_not_a_crash(tmp_path):
    model = tiny_model()
    meta = metadata_of(model) | {"metadata": json.dumps({"notices": 5, "notice": ["x"], "author": "me"})}
    loaded = load_checkpoint(safetensors_with(tmp_path / "n.safetensors", tensors_of(model), meta))
    assert loaded.metadata.get("author") == "me" and "notices" not in loaded.metadata


# ---- not a checkpoint at all -----------------------------------------------------------------------------
@pytest.mark.parametrize("value", [None, 12, b"model.safetensors", ""])
def test_load_of_a_non_path_is_a_checkpoint_error(value):
    import attnlab

    with pytest.raises(CheckpointError, match="give the path"):
        attnlab.load(value)


def test_a_fifo_and_a_device_are_not_regular_files(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        with pytest.raises(CheckpointError) as info:
            load_checkpoint(path)
        assert "not a regular file" in str(info.value) and "folder" not in str(info.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="holds no config.json"):  # a folder opens as a model folder
        load_checkpoint(empty)


def test_tiny_config_is_what_the_fixtures_use():
    assert TINY.problems() == []


def nested_lists(depth):
    outer = inner = []
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize("protocol", [0, 2, 4])
def test_the_pickle_scan_measures_nesting_not_width(protocol):
    """A long flat list or a wide dict is shallow; only real nesting counts (checked against pickle itself)."""
    import io
    import pickle

    from attnlab.checkpoints.pickle_scan import pickle_problem

    def problem(obj):
        return pickle_problem(io.BytesIO(pickle.dumps(obj, protocol=protocol)))

    assert problem(list(range(20_000))) == "" and problem({i: [i, (i,)] for i in range(5_000)}) == ""
    assert problem(nested_lists(limits.MAX_PICKLE_DEPTH - 4)) == ""
    assert "levels deep" in problem(nested_lists(limits.MAX_PICKLE_DEPTH + 1))
    assert "instructions" in problem(list(range(limits.MAX_PICKLE_OPS)))


def test_a_contradicted_size_writes_the_shape_as_torch_prints_a_size():
    """One shape format in every checkpoint message: no digit grouping inside the brackets ("[50,257, 16]"
    would read as three sizes), while the sizes in the sentence keep theirs."""
    from attnlab.checkpoints.limits import check_config_sizes
    from attnlab.engine.config import ModelConfig

    config = ModelConfig(arch="decoder-only", tgt_vocab_size=60_000, d_model=16, n_heads=2, d_ff=32)
    problems = check_config_sizes(config, {"tgt_embed.weight": (50_257, 16)})
    assert problems == [
        "the config says tgt_vocab_size 60,000, but tgt_embed.weight is [50257, 16]: tgt_vocab_size should be 50,257"
    ]
