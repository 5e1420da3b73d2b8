"""`attnlab CHECKPOINT --quit-after-trace` (the install and bundle smoke test): the app opens the checkpoint named
on the command line, paints its first trace, says so and exits 0."""

import os
import subprocess
import sys
from pathlib import Path

from attnlab import cli

ROOT = Path(__file__).resolve().parents[2]


def app_env(tmp_path: Path) -> dict[str, str]:
    """Off screen, settings in tmp_path, and this tree's attnlab (not an installed one) in the child."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(
        os.environ, QT_QPA_PLATFORM="offscreen", ATTNLAB_SETTINGS=str(tmp_path / "settings.ini"), PYTHONPATH=path
    )


def test_the_app_opens_the_checkpoint_paints_the_first_trace_and_exits_0(tmp_path):
    checkpoint = tmp_path / "small.safetensors"
    assert (
        cli.main(
            [
                "init",
                "--d-model",
                "32",
                "--heads",
                "2",
                "--d-ff",
                "64",
                "--enc-layers",
                "1",
                "--dec-layers",
                "1",
                "--out",
                str(checkpoint),
            ]
        )
        == 0
    )
    env = app_env(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", str(checkpoint), "--quit-after-trace"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("first trace painted after")]
    assert len(lines) == 1 and lines[0].endswith(f"({checkpoint})"), result.stderr


def test_an_unknown_stage_exits_2_listing_the_valid_names(tmp_path):
    env = app_env(tmp_path)
    command = [sys.executable, "-m", "attnlab.cli", "--bundled", "language", "--quit-after-trace", "--stage"]
    result = subprocess.run(
        command + ["dec.9.self.nope"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 2, result.stderr
    line = [x for x in result.stderr.splitlines() if "unknown stage" in x]
    assert len(line) == 1 and "'dec.9.self.nope'" in line[0]
    assert "dec.0.self.weights" in line[0] and "out.probs" in line[0] and "tgt.tokens" in line[0]
    good = subprocess.run(
        command + ["dec.0.self.weights"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert good.returncode == 0 and "unknown stage" not in good.stderr, good.stderr


def test_a_refused_first_trace_exits_2_in_one_line(tmp_path):
    """A model that opens but whose first run is refused (a folder without a tokenizer reads token ids typed as
    numbers; text is refused) ends the smoke test with exit 2: it waited for ever before (issue 38.6)."""
    from tests.support import hf_tiny

    model, _config = hf_tiny.llama()
    model.save_pretrained(tmp_path / "llama", safe_serialization=True)  # weights and config.json only
    env = app_env(tmp_path)
    command = [sys.executable, "-m", "attnlab.cli", str(tmp_path / "llama"), "--src", "the black cat"]
    result = subprocess.run(
        [*command, "--quit-after-trace"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("attnlab:")]
    assert len(lines) == 1 and "type token ids as numbers" in lines[0], result.stderr


def test_a_model_that_cannot_be_opened_exits_2_without_a_dialog(tmp_path):
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"not a safetensors file")
    env = app_env(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", str(broken), "--quit-after-trace"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("attnlab:")]
    assert len(lines) == 1 and "could not open the model" in lines[0] and "broken.safetensors" in lines[0]
