"""`attnlab --checkpoint PATH` (issue 32): the spelling the sub-commands take means the app's CHECKPOINT
(bundled:NAME the bundled model NAME); both given, or a bundled name that does not exist, is one line and exit 2.
Every case is decided before a model loads."""

from __future__ import annotations

import argparse

import pytest

import attnlab.checkpoints as checkpoints
import attnlab.checkpoints.loader as loader
from attnlab import cli
from attnlab.checkpoints import save_checkpoint
from attnlab.commands import app as app_command


def app_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    app_command.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture
def no_loading(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(checkpoints, "load_bundled", refuse)
    monkeypatch.setattr(checkpoints, "load_checkpoint", refuse)
    monkeypatch.setattr(loader, "load_checkpoint", refuse)


@pytest.fixture
def one_layer(tiny_model, tmp_path):
    return save_checkpoint(tiny_model("encoder-decoder", n_encoder_layers=1), tmp_path / "one.safetensors")


def test_checkpoint_option_is_the_positional_checkpoint(one_layer):
    args = app_args("--checkpoint", str(one_layer), "--stage", "enc.0.self.weights")
    assert app_command.checkpoint_problem(args) == ""
    assert args.checkpoint == str(one_layer) == app_args(str(one_layer)).checkpoint
    assert app_command.early_stage_problem(args) == ""


@pytest.mark.usefixtures("no_loading")
def test_the_stage_check_reads_the_checkpoint_given_either_way(one_layer, capsys):
    for argv in (["--checkpoint", str(one_layer)], [str(one_layer)]):
        assert cli.main([*argv, "--stage", "enc.1.self.weights"]) == 2  # the file has one encoder layer
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "unknown stage 'enc.1.self.weights'" in err


@pytest.mark.usefixtures("no_loading")
def test_both_spellings_at_once_are_one_line_and_exit_2(one_layer, capsys):
    assert cli.main([str(one_layer), "--checkpoint", str(one_layer)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"attnlab: error: {app_command.BOTH_CHECKPOINTS}"


@pytest.mark.usefixtures("no_loading")
def test_bundled_names_as_the_sub_commands_spell_them(capsys):
    args = app_args("--checkpoint", "bundled:language")
    assert app_command.checkpoint_problem(args) == "" and args.bundled == "language" and args.checkpoint is None
    assert cli.main(["--checkpoint", "bundled:language", "--stage", "enc.0.self.weights"]) == 2  # no encoder
    assert "unknown stage 'enc.0.self.weights'" in capsys.readouterr().err
    assert cli.main(["--checkpoint", "bundled:nonsense"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown bundled model 'nonsense'" in err and "translation" in err
