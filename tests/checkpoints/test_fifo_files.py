"""FIFOs and devices named where a checkpoint file is expected (issue 38.6): a config.json that is a FIFO made the
folder "not a Hugging Face folder", and a tokenizer.json linked to /dev/zero or a FIFO was skipped silently (the
model opened with another tokenizer, or none). Each is now refused in one line naming the file and what it is,
from stat alone: a FIFO is never opened (an open would block until a writer came)."""

from __future__ import annotations

import os
import threading

import pytest

import attnlab
from attnlab.bounded_read import FileRefused
from attnlab.checkpoints import CheckpointError
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.file_checks import has_file, regular_file
from attnlab.checkpoints.tokenizer_files import tokenizer_at

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX only")


def refusal_of(folder, **kwargs) -> str:
    """The one-line refusal of opening `folder`, run where a blocked open cannot hang the test."""
    outcome: list[BaseException | object] = []
    worker = threading.Thread(target=lambda: outcome.append(_try(folder, kwargs)), daemon=True)
    worker.start()
    worker.join(30)
    assert outcome, "opening the folder blocked (a FIFO was opened)"
    assert isinstance(outcome[0], CheckpointError), outcome[0]
    message = str(outcome[0])
    assert "\n" not in message
    return message


def _try(folder, kwargs) -> BaseException | object:
    try:
        return attnlab.load(folder, **kwargs)
    except BaseException as e:  # handed back to the test
        return e


@pytest.fixture
def llama_folder(tmp_path):
    from tests.support.hf_tiny import llama

    model, _ = llama()
    model.save_pretrained(str(tmp_path))
    return tmp_path


def test_a_config_json_that_is_a_fifo_is_named_as_one(llama_folder):
    (llama_folder / "config.json").unlink()
    os.mkfifo(llama_folder / "config.json")
    message = refusal_of(llama_folder)
    assert "config.json" in message and "is a FIFO (named pipe), not a regular file" in message


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.txt"])
def test_a_tokenizer_file_linked_to_a_device_is_refused_naming_the_device(llama_folder, name):
    (llama_folder / name).symlink_to("/dev/zero")
    message = refusal_of(llama_folder)
    assert f"{name} links to a device (/dev/zero), not a regular file" in message


def test_a_tokenizer_json_that_is_a_fifo_is_refused_unopened(llama_folder):
    os.mkfifo(llama_folder / "tokenizer.json")
    message = refusal_of(llama_folder)
    assert "tokenizer.json is a FIFO (named pipe)" in message


def test_a_tokenizer_given_as_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "tokenizer.json"
    os.mkfifo(fifo)
    problems = Problems(tmp_path)
    assert tokenizer_at(fifo, problems) is None
    assert len(problems.items) == 1 and "is a FIFO (named pipe)" in problems.items[0]


def test_the_check_names_each_kind_and_passes_files_and_absences(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file").write_text("{}")
    (tmp_path / "folder").mkdir()
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    assert regular_file(tmp_path / "file") == tmp_path / "file"
    assert has_file(tmp_path, "file") and not has_file(tmp_path, "absent")
    expected = {
        "pipe": "pipe is a FIFO (named pipe)",
        "folder": "folder is a folder",
        "zero": "zero links to a device (/dev/zero)",
        "dangling": "dangling links to nothing",
    }
    for name, words in expected.items():
        with pytest.raises(FileRefused, match=words.replace("(", r"\(").replace(")", r"\)")):
            has_file(tmp_path, name)
