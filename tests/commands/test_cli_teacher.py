"""A teacher's command line: `attnlab --present / --view model / --compare`, `attnlab translate` and
`attnlab generate`, `--stage` checked before the model loads, and one clear line when there is no display."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import attnlab.checkpoints as checkpoints
import attnlab.checkpoints.loader as loader
from attnlab import cli
from attnlab.checkpoints import load_bundled, save_checkpoint
from attnlab.checkpoints.config_only import bundled_config, config_without_weights
from attnlab.commands import app as app_command
from attnlab.present.stages import stage_keys_for_config, stages_for

WAIT = 20000
ROOT = Path(__file__).resolve().parents[2]


def app_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    app_command.add_arguments(parser)
    return parser.parse_args(list(argv))


def no_loading(monkeypatch) -> None:
    """Any attempt to build a model fails the test: the checks must come before the load."""

    def refuse(*_a, **_k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(checkpoints, "load_bundled", refuse)
    monkeypatch.setattr(checkpoints, "load_checkpoint", refuse)
    monkeypatch.setattr(loader, "load_checkpoint", refuse)


# ---- the app's flags ------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("isolated_settings")
def test_present_view_model_and_compare_set_the_window_state(qtbot, monkeypatch, generating_model):
    from PySide6.QtWidgets import QApplication, QPushButton

    from attnlab.ui.window.main_window import MainWindow

    monkeypatch.setattr(checkpoints, "load_bundled", lambda name="translation": generating_model())
    seen = {}

    def fake_exec():  # instead of the event loop: wait for the first trace (and the pin after it), look, close
        w = next(x for x in QApplication.topLevelWidgets() if isinstance(x, MainWindow) and x.isVisible())
        qtbot.waitUntil(lambda: w.session.trace is not None and w.session.pinned is not None, timeout=WAIT)
        seen.update(
            presenting=w.presenting,
            menu_hidden=not w.menuBar().isVisible(),
            model_view=w.model_view_dock.isVisible(),
            pinned=w.session.pinned is w.session.trace,
            compare=w.session.view.compare,
            pin_text=w.findChild(QPushButton, "pinButton").text(),
        )
        w.session.shutdown()
        w.errors.uninstall()  # the app's exception hooks must not outlive its window (the next test's would be lost)
        w.close()
        w.deleteLater()
        return 0

    monkeypatch.setattr(QApplication, "exec", lambda self: fake_exec())
    assert app_command.run(app_args("--present", "--view", "model", "--compare")) == 0
    assert seen == {
        "presenting": True,
        "menu_hidden": True,
        "model_view": True,
        "pinned": True,
        "compare": "diff",
        "pin_text": "Unpin A",
    }


def test_the_flags_are_off_unless_given():
    args = app_args()
    assert (args.present, args.view, args.compare) == (False, None, False)
    with pytest.raises(SystemExit):
        app_args("--view", "everything")


# ---- --stage before the load ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "arch, changes",
    [
        ("encoder-decoder", {}),
        ("decoder-only", {}),
        ("encoder-only", {}),
        ("decoder-only", {"positional": "rotary", "n_decoder_layers": 3}),
        ("encoder-decoder", {"n_encoder_layers": 1, "n_decoder_layers": 3}),
    ],
)
def test_stage_keys_from_the_config_are_those_of_a_run(tiny_model, arch, changes):
    model = tiny_model(arch, **changes)
    trace = model.trace("the black cat", "le chat" if model.config.arch == "encoder-decoder" else None)
    assert stage_keys_for_config(model.config) == [stage.key for stage in stages_for(trace)]


def test_an_unknown_stage_is_refused_before_the_bundled_model_loads(monkeypatch, capsys):
    no_loading(monkeypatch)
    assert app_command.run(app_args("--bundled", "language", "--stage", "enc.0.self.weights")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown stage 'enc.0.self.weights'" in err
    assert "dec.0.self.weights" in err and "tgt.tokens" in err and "src.tokens" not in err
    assert app_command.early_stage_problem(app_args("--bundled", "language", "--stage", "dec.0.self.weights")) == ""


def test_an_unknown_stage_of_a_checkpoint_file_is_refused_from_its_header(tiny_model, tmp_path, monkeypatch, capsys):
    path = save_checkpoint(tiny_model("encoder-decoder", n_encoder_layers=1), tmp_path / "one.safetensors")
    assert config_without_weights(path) == tiny_model("encoder-decoder", n_encoder_layers=1).config
    no_loading(monkeypatch)
    assert app_command.run(app_args(str(path), "--stage", "enc.1.self.weights")) == 2  # it has one encoder layer
    assert "unknown stage 'enc.1.self.weights'" in capsys.readouterr().err
    assert app_command.early_stage_problem(app_args(str(path), "--stage", "enc.0.self.weights")) == ""


def test_a_hugging_face_folder_s_stages_come_from_its_config_json(tmp_path):
    from transformers import GPT2Config

    hf = GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=50, n_positions=32)
    (tmp_path / "config.json").write_text(json.dumps(hf.to_dict()))  # no weights: none are read
    keys = stage_keys_for_config(config_without_weights(tmp_path))
    assert "dec.1.self.weights" in keys and "dec.2.self.weights" not in keys and "src.tokens" not in keys


def test_configs_that_cannot_be_told_early_leave_the_check_to_the_first_trace(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"PK\x03\x04 not read")
    (tmp_path / "broken.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    assert config_without_weights(tmp_path / "model.pt") is None
    assert config_without_weights(tmp_path / "broken.safetensors") is None
    assert config_without_weights(tmp_path / "absent.safetensors") is None
    assert app_command.early_stage_problem(app_args(str(tmp_path / "model.pt"), "--stage", "nope")) == ""
    assert bundled_config("translation") == load_bundled("translation").config


# ---- no display ----------------------------------------------------------------------------------------------
def test_no_display_is_one_line_and_exit_2(tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "attnlab.cli"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"attnlab: error: {app_command.NO_DISPLAY}"
    assert "no display: set DISPLAY, or use QT_QPA_PLATFORM=offscreen for `attnlab render`" in app_command.NO_DISPLAY


def test_display_problem_reads_the_environment():
    if sys.platform in ("darwin", "win32"):
        assert app_command.display_problem({}) == ""
        return
    assert app_command.display_problem({}) == app_command.NO_DISPLAY
    assert app_command.display_problem({"DISPLAY": ""}) == app_command.NO_DISPLAY
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        assert app_command.display_problem({name: ":0"}) == ""


# ---- translate and generate ----------------------------------------------------------------------------------
def test_translate_prints_what_the_api_translates(capsys):
    text = "I don't like the cake!"
    assert cli.main(["translate", text]) == 0
    out, err = capsys.readouterr()
    model = load_bundled("translation")
    assert out == model.translate(text) + "\n"
    assert "read as: i do not like the cake ." in err


def test_translate_of_a_checkpoint_file(tiny_model, tmp_path, capsys):
    model = tiny_model("encoder-decoder")
    path = save_checkpoint(model, tmp_path / "tiny.safetensors")
    assert cli.main(["translate", "the black cat", "--checkpoint", str(path), "--max-new-tokens", "5"]) == 0
    out = capsys.readouterr().out
    assert out == checkpoints.load_checkpoint(path).translate("the black cat", max_new_tokens=5) + "\n"


def test_generate_prints_what_the_api_generates(capsys):
    assert cli.main(["generate", "Le chat", "--max-new-tokens", "4"]) == 0
    out = capsys.readouterr().out
    *_, last = load_bundled("language").generate("Le chat", max_new_tokens=4)
    assert out == last.info["generated"] + "\n"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["translate", "le chat", "--checkpoint", "bundled:language"], "decoder-only: it has no encoder"),
        (["generate", "the cat", "--checkpoint", "bundled:translation"], "encoder-decoder"),
        (["generate", "le chat", "--max-new-tokens", "0"], "--max-new-tokens must be between 1 and"),
    ],
)
def test_the_wrong_model_or_count_is_one_line_and_exit_2(argv, words, capsys):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and words in err and err.startswith("attnlab ")


def test_translate_with_an_encoder_only_model_exits_2(tiny_model, tmp_path, capsys):
    path = save_checkpoint(tiny_model("encoder-only"), tmp_path / "enc.safetensors")
    assert cli.main(["translate", "the cat", "--checkpoint", str(path)]) == 2
    assert "encoder-only: it has no decoder" in capsys.readouterr().err
