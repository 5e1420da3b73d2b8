"""A GGUF file given as a checkpoint is read as GGUF whatever its name (issue 36; a file with no model in it is
refused in one line naming GGUF), and one posing as a Hugging Face folder's model.safetensors is named as such."""

import struct

import pytest

from attnlab.checkpoints import CheckpointError, load_checkpoint
from attnlab.cli import main


def gguf_file(path):
    """The fixed header of a GGUF v3 file as ggml's docs/gguf.md lays it out: the magic "GGUF", uint32 version,
    uint64 tensor count, uint64 metadata key/value count (little-endian); no tensors, no metadata."""
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    return path


@pytest.mark.parametrize("name", ["model.gguf", "model.safetensors", "model"])
def test_a_gguf_file_is_read_as_gguf_whatever_its_suffix(tmp_path, name):
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(gguf_file(tmp_path / name))
    message = str(caught.value)
    assert "GGUF file has no general.architecture" in message and len(message.splitlines()) == 1
    assert "not a safetensors file" not in message and "PyTorch" not in message


def test_a_gguf_posing_as_a_folders_safetensors_is_named(tmp_path):
    (tmp_path / "config.json").write_text(
        '{"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1, "vocab_size": 5}'
    )
    gguf_file(tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(tmp_path)
    assert "this is a GGUF file (llama.cpp's format), not a safetensors file" in str(caught.value)


@pytest.mark.parametrize("command", [["info"], ["trace", "--src", "a b", "--out", "x.npz", "--checkpoint"]])
def test_the_cli_says_it_in_one_line(tmp_path, capsys, command):
    path = str(gguf_file(tmp_path / "model.gguf"))
    args = [*command, path]
    if command[0] == "trace":
        args[args.index("x.npz")] = str(tmp_path / "x.npz")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "GGUF file" in err
    assert not (tmp_path / "x.npz").exists()
