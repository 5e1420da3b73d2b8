"""Hostile command lines and failing writes (issue 14): every failure is exit 2 with one line and no traceback;
a write that fails part-way leaves the old file as it was."""

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attnlab.checkpoints import CheckpointError, save_checkpoint
from attnlab.cli import main
from attnlab.fileio import WriteError, atomic_write, atomic_write_bytes
from tests.support.hostile_files import ROOT, TINY, tiny_checkpoint, tiny_model

ATTNLAB = [sys.executable, "-m", "attnlab.cli"]
SMALL = ["--d-model", "16", "--heads", "4", "--d-ff", "32", "--enc-layers", "1", "--dec-layers", "1", "--max-len", "16"]


def cli(*args, stdout=subprocess.PIPE, env=None, limit_file_size=None, timeout=120):
    """The attnlab command in a child process: (exit code, stdout, stderr, seconds)."""

    def limits():
        if limit_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

    proc = subprocess.run(
        [*ATTNLAB, *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        preexec_fn=limits,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    return proc.returncode, proc.stdout or "", proc.stderr


def assert_one_line_exit_2(code, err, *phrases):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for phrase in phrases:
        assert phrase in err, err


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("cli") / "tiny.safetensors")


# ---- in-process: exit codes and messages -------------------------------------------------------------------
def test_init_under_a_file_is_refused_before_building(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    code = main(["init", *SMALL, "--out", str(tmp_path / "afile" / "m.safetensors")])
    assert_one_line_exit_2(code, capsys.readouterr().err, "is a file, not a folder")


@pytest.mark.parametrize(
    "flag, value, field",
    [
        ("--dec-layers", 1_000_000, "n_decoder_layers"),
        ("--d-model", 10**12, "d_model"),
        ("--d-ff", 10**9, "d_ff"),
        ("--max-len", 10**9, "max_len"),
    ],
)
def test_init_with_absurd_sizes_is_refused_up_front(tmp_path, capsys, flag, value, field):
    code = main(["init", flag, str(value), "--out", str(tmp_path / "m.safetensors")])
    assert_one_line_exit_2(code, capsys.readouterr().err, field, "more than attnlab handles")
    assert not (tmp_path / "m.safetensors").exists()


@pytest.mark.parametrize(
    "args, phrase",
    [
        (["--heads", "0"], "at least 1"),
        (["--heads", "-2"], "at least 1"),
        (["--temperature", "1e-40"], "too small"),
        (["--temperature", "1e-320"], "too small"),
        (["--temperature", "nan"], "positive"),
        (["--temperature", "inf"], "finite"),
    ],
)
def test_trace_options_that_cannot_run_exit_2(ckpt, tmp_path, capsys, args, phrase):
    code = main(["trace", "--checkpoint", str(ckpt), "--src", "the cat", *args, "--out", str(tmp_path / "t.npz")])
    assert_one_line_exit_2(code, capsys.readouterr().err, phrase)
    code = main(
        [
            "trace",
            "--checkpoint",
            str(ckpt),
            "--src",
            "the cat",
            "--generate",
            "3",
            *args,
            "--out",
            str(tmp_path / "t.npz"),
        ]
    )
    assert_one_line_exit_2(code, capsys.readouterr().err, phrase)


@pytest.mark.parametrize("command", ["eval", "info"])
def test_missing_broken_and_refused_checkpoints_exit_2(tmp_path, capsys, command):
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    deep = tmp_path / "deep.pt"
    from tests.support.hostile_files import deep_list_pickle, torch_zip_with_pickle

    torch_zip_with_pickle(deep, deep_list_pickle(5_000))
    for path, phrase in (
        (tmp_path / "missing.safetensors", "no file"),
        (broken, "unreadable"),
        (deep, "levels deep"),
        ("/dev/zero", "not a regular file"),
    ):
        code = main([command, str(path)])
        err = capsys.readouterr().err
        assert code == 2 and phrase in err and "Traceback" not in err, err


def test_an_unexpected_error_is_exit_1_with_a_short_message(monkeypatch, capsys):
    from attnlab.commands import info

    def broken(_args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(info, "run", broken)
    assert main(["info", "x"]) == 1
    err = capsys.readouterr().err
    assert "ZeroDivisionError: a bug" in err and "ATTNLAB_DEBUG=1" in err and "Traceback" not in err
    monkeypatch.setenv("ATTNLAB_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["info", "x"])


# ---- child processes: full disks, size limits, fifos ----------------------------------------------------
def test_info_to_a_full_disk_exits_2_with_one_line(ckpt):
    with open("/dev/full", "w") as full:
        code, _out, err = cli("info", ckpt, stdout=full)
    assert_one_line_exit_2(code, err, "No space left on device")


def test_a_fifo_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    code, _out, err = cli("info", fifo, timeout=60)  # opening a fifo to read would block forever
    assert_one_line_exit_2(code, err, "not a regular file")
    assert "folder" not in err


def test_a_trace_that_cannot_be_written_keeps_the_old_file(ckpt, tmp_path):
    out = tmp_path / "trace.npz"
    code, _o, err = cli("trace", "--checkpoint", ckpt, "--src", "the black cat", "--out", out)
    assert code == 0, err
    good = out.read_bytes()
    assert len(good) > 20_000
    code, _o, err = cli(
        "trace", "--checkpoint", ckpt, "--src", "the black cat sat on the mat", "--out", out, limit_file_size=16_000
    )  # the write fails part-way (EFBIG)
    assert_one_line_exit_2(code, err, "cannot write", "nothing was changed")
    assert out.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.npz"]  # no temporary file left behind
    np.load(out, allow_pickle=False)


def test_a_checkpoint_that_cannot_be_written_keeps_the_old_file(tmp_path):
    out = tiny_checkpoint(tmp_path / "m.safetensors")
    good = out.read_bytes()
    code, _o, err = cli("init", *SMALL, "--d-model", "64", "--force", "--out", out, limit_file_size=20_000)
    assert_one_line_exit_2(code, err, "Cannot save to")
    assert out.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["m.safetensors"]


# ---- atomic_write itself ---------------------------------------------------------------------------------
def test_a_writer_failing_part_way_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "settings.json"
    target.write_text("old and good")
    os.chmod(target, 0o640)

    def half_then_fail(tmp: Path):
        tmp.write_text("new but ha")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(WriteError, match="No space left on device; nothing was changed"):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old and good" and os.listdir(tmp_path) == ["settings.json"]
    atomic_write_bytes(target, b"new and whole")
    assert target.read_bytes() == b"new and whole"
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o640)  # the file keeps its permissions


def test_save_checkpoint_that_fails_part_way_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    from attnlab.checkpoints import native

    out = tiny_checkpoint(tmp_path / "m.safetensors")
    good = out.read_bytes()

    def partial(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\0" * 100)
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(native, "save_file", partial)
    with pytest.raises(CheckpointError, match="File too large"):
        save_checkpoint(tiny_model(d_model=32), out)
    assert out.read_bytes() == good and os.listdir(tmp_path) == ["m.safetensors"]


def test_writing_into_a_missing_folder_or_over_a_folder_is_refused(tmp_path):
    with pytest.raises(WriteError, match="does not exist"):
        atomic_write_bytes(tmp_path / "nope" / "x.bin", b"1")
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(WriteError, match="not a regular file"):
        atomic_write_bytes(tmp_path / "dir.npz", b"1")


def test_tiny_sizes_match_the_fixture():
    assert TINY.d_model == 16
