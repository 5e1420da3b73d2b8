"""`attnlab CHECKPOINT --quit-after-trace` (the install and bundle smoke test): the app opens the checkpoint named
on the command line, paints its first trace, says so and exits 0."""

import os
import subprocess
import sys

from attnlab import cli


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
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ATTNLAB_SETTINGS=str(tmp_path / "settings.ini"))
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
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ATTNLAB_SETTINGS=str(tmp_path / "settings.ini"))
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
