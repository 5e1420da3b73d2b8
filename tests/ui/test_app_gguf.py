"""Opening a GGUF file (issue 36): `attnlab info` / `attnlab trace` with it, and the app's File → Open, whose
banner and Model info say what was dequantized to what."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.cli import main
from attnlab.ui.window import open_model
from tests.support.gguf_tiny import write_gguf

WAIT = 15000
pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory):
    return write_gguf(tmp_path_factory.mktemp("gguf"), "qwen2", "Q5_0")


def test_the_cli_reads_a_gguf_file(gguf_path, tmp_path, capsys):
    assert main(["info", str(gguf_path)]) == 0
    out = capsys.readouterr().out
    assert "dequantized from Q5_0 (" in out and "GGUF metadata (qwen2.embedding_length)" in out
    npz = tmp_path / "t.npz"
    assert main(["trace", "--checkpoint", str(gguf_path), "--src", "the cat sat", "--out", str(npz)]) == 0
    with np.load(npz) as saved:
        assert saved["logits"].shape[-1] == 269  # the tiny byte-level vocabulary: 256 bytes, 12 merges, 1 special


def test_file_open_shows_the_dequantization_in_the_banner_and_model_info(qtbot, open_window, gguf_path):
    assert "*.gguf" in open_model.FILE_FILTER
    win = open_window()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.open_checkpoint(str(gguf_path))
    qtbot.waitUntil(lambda: not win.session.busy, timeout=WAIT)
    assert win.session.model.name == gguf_path.name
    assert "Dequantized from Q5_0" in win.banner.text() and "to float32" in win.banner.text()
    html = open_model.model_info_html(win.session.model)
    assert "GGUF file (qwen2), dequantized from Q5_0" in html and "GGUF metadata (qwen2.block_count)" in html
