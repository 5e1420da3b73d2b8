"""The models on this computer (issue 34): `attnlab models` and File → Open model… list the Hugging Face
cache's repositories (huggingface_hub's scan), each with "opens" or the reason it will not, which is the
reason opening it gives; recent files and drops take ids; nothing opens a socket."""

from __future__ import annotations

import json
import socket

import pytest
import torch
from huggingface_hub import constants, scan_cache_dir
from PySide6.QtCore import QMimeData, QSettings, QUrl
from safetensors.torch import save

from attnlab.checkpoints import CheckpointError, load_checkpoint
from attnlab.checkpoints.hf_cache_scan import cached_models
from attnlab.cli import main
from attnlab.ui.window import app as appsettings
from attnlab.ui.window.cached_models import CachedModelsDialog
from attnlab.ui.window.window_files import dropped_model
from tests.support import hostile_files as h
from tests.support.hf_cache_files import add_revision

GPT2 = json.dumps(h.GPT2_CONFIG).encode()
WEIGHTS = save(h.gpt2_state())


def repositories() -> dict[str, dict[str, bytes]]:
    int8 = save({k: (v * 100).to(torch.int8) for k, v in h.gpt2_state().items()})
    custom = h.GPT2_CONFIG | {"model_type": "mything", "auto_map": {"AutoModel": "modeling.Thing"}}
    return {
        "acme/gpt2": {"config.json": GPT2, "model.safetensors": WEIGHTS},
        "acme/quantized": {
            "config.json": json.dumps(
                h.GPT2_CONFIG | {"quantization_config": {"quant_method": "hqq"}}  # (bitsandbytes opens: 36.2)
            ).encode(),
            "model.safetensors": int8,
        },
        "acme/custom-code": {"config.json": json.dumps(custom).encode(), "model.safetensors": WEIGHTS},
        "acme/no-weights": {"config.json": GPT2},
        "acme/gguf-only": {"config.json": GPT2, "tiny.Q4_K_M.gguf": b"GGUF\x03\x00\x00\x00"},
        "acme/whisper": {"config.json": json.dumps({"model_type": "whisper"}).encode()},
        "acme/too-wide": {
            "config.json": json.dumps(h.GPT2_CONFIG | {"n_head": 3}).encode(),
            "model.safetensors": WEIGHTS,
        },
    }


@pytest.fixture
def cache(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    for repo_id, files in repositories().items():
        add_revision(hub, repo_id, files)
    add_revision(hub, "acme/gpt2", {"config.json": GPT2, "model.safetensors": WEIGHTS, "x": b"1"}, refs=("v2",))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))

    def refuse(*args, **kwargs):
        raise AssertionError(f"a socket was opened: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return hub


def test_every_cached_repository_is_listed_with_what_opening_it_says(cache):
    models, problems = cached_models()
    assert not problems
    scanned = {r.repo_id: r for r in scan_cache_dir(cache).repos}
    assert [m.repo_id for m in models] == sorted(scanned)
    for m in models:
        assert m.size == scanned[m.repo_id].size_on_disk
        assert len(m.revisions) == len(scanned[m.repo_id].revisions)
        try:
            load_checkpoint(m.spec)
            said = ""
        except CheckpointError as e:
            said = str(e)
        assert m.opens == (said == ""), (m, said)
    status = {m.repo_id: m.status for m in models}
    assert status["acme/gpt2"] == ""
    assert status["acme/quantized"].startswith("HQQ-quantized checkpoints are not supported")
    assert "auto_map" in status["acme/custom-code"] and "runs no code" in status["acme/custom-code"]
    assert status["acme/gguf-only"].startswith("GGUF weights only")
    assert status["acme/no-weights"].startswith("no weights")
    assert "Whisper" in status["acme/whisper"]
    assert "\n" not in "".join(status.values())


def test_attnlab_models_prints_the_same_table(cache, capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["MODEL", "SIZE", "REVISIONS", "OPENS", "IN", "ATTNLAB"]
    rows = {line.split()[0]: line for line in out[1:-1]}
    models, _ = cached_models()
    assert list(rows) == [m.repo_id for m in models]
    assert rows["acme/gpt2"].endswith("opens") and "main, v2" in rows["acme/gpt2"]
    assert "no: HQQ-quantized" in rows["acme/quantized"]
    assert out[-1].startswith(f"{len(models)} models in {cache}")


def test_attnlab_models_reads_the_cache_without_torch(cache):
    """`attnlab models` reads config.json files only: in a fresh process it never imports torch (1.2 s of a
    listing that takes 0.17 s: benchmarks/cache_scan_bench.py)."""
    import subprocess
    import sys

    code = "import sys; from attnlab.cli import main; rc = main(['models']); print(rc, 'torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "0 False", done.stdout + done.stderr
    assert "acme/gpt2" in done.stdout and "no: HQQ-quantized" in done.stdout  # it did read the configs


def test_an_empty_or_absent_cache_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "absent"))
    assert main(["models"]) == 0
    assert capsys.readouterr().out.startswith(f"No models in the Hugging Face cache at {tmp_path / 'absent'}")


def test_the_picker_lists_them_and_opens_one_by_id(cache, qtbot):
    opened = []
    dialog = CachedModelsDialog(opened.append)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.table.rowCount() > 0, timeout=10_000)
    models, _ = cached_models()
    table = dialog.table
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == [m.repo_id for m in models]
    assert [table.item(r, 3).text() for r in range(table.rowCount())] == [m.status or "opens" for m in models]
    refused = next(r for r, m in enumerate(models) if not m.opens)
    dialog.open_row(refused)
    assert opened == [] and dialog.isVisible() is False  # never shown: still not accepted
    table.selectRow(refused)
    assert not dialog.open_button.isEnabled()
    good = next(r for r, m in enumerate(models) if m.repo_id == "acme/gpt2")
    table.selectRow(good)
    assert dialog.open_button.isEnabled()
    dialog.open_button.click()
    assert opened == ["acme/gpt2"]
    assert load_checkpoint(opened[0]).name == "acme/gpt2"


def test_recent_files_and_drops_take_ids(tmp_path, cache):
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    appsettings.add_recent_file(settings, "acme/gpt2@v2")
    appsettings.add_recent_file(settings, "acme/gpt2")
    assert appsettings.recent_files(settings) == ["acme/gpt2", "acme/gpt2@v2"]
    data = QMimeData()
    data.setText(" acme/gpt2\n")
    assert dropped_model(data) == "acme/gpt2"
    data = QMimeData()
    data.setUrls([QUrl("https://huggingface.co/acme/gpt2/tree/main")])
    assert dropped_model(data) == "acme/gpt2"
    data = QMimeData()
    data.setText("not a model")
    assert dropped_model(data) == ""
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(tmp_path))])
    assert dropped_model(data) == str(tmp_path)


@pytest.mark.usefixtures("isolated_settings")
def test_file_open_model_opens_the_double_clicked_one_in_the_window(cache, qtbot):
    from PySide6.QtGui import QAction

    from attnlab.ui.window.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    try:
        win.session.src = "1 2 3"  # token ids: the tiny model has no tokenizer
        win.findChild(QAction, "openCachedModelAction").trigger()
        dialog = win._cached_models_dialog
        qtbot.waitUntil(lambda: dialog.table.rowCount() > 0, timeout=10_000)
        row = [m.repo_id for m in dialog.models].index("acme/gpt2")
        with qtbot.waitSignal(win.session.traceReady, timeout=15_000):
            dialog.table.cellDoubleClicked.emit(row, 0)
        assert win.session.model.name == "acme/gpt2" and win.session.model_path == "acme/gpt2"
        assert not dialog.isVisible()
        assert appsettings.recent_files(win.settings)[0] == "acme/gpt2"
    finally:
        win.errors.uninstall()
        win.session.shutdown()
