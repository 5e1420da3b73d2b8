"""Help → About names the attnlab version (the one pyproject.toml reads), the library versions and the device;
`attnlab --version` prints the same version."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import importlib.metadata

import pyqtgraph
import PySide6
import pytest
import torch
from PySide6.QtCore import qVersion
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication

import attnlab
from attnlab import cli
from attnlab.ui.window.about import AboutDialog, device_description
from attnlab.ui.window.main_window import MainWindow
from tests.support.tiny import build_tiny_model as tiny_model

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def test_the_installed_metadata_version_is_the_package_version():
    assert importlib.metadata.version("attnlab") == attnlab.__version__


def test_version_flag_prints_the_version(capsys):
    with pytest.raises(SystemExit) as leave:
        cli.main(["--version"])
    assert leave.value.code == 0
    assert capsys.readouterr().out.strip() == f"attnlab {attnlab.__version__}"


def test_device_description_names_the_cpu_or_the_gpu():
    assert device_description(torch.device("cpu")).startswith("CPU (")
    if torch.cuda.is_available():
        assert device_description(torch.device("cuda")) == f"CUDA: {torch.cuda.get_device_name(0)}"


def test_help_about_shows_versions_and_the_models_device(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    model = tiny_model()
    with qtbot.waitSignal(window.session.traceReady, timeout=15000):
        window.session.set_model(model, "the black cat sees the dog", "le chat")
    try:
        window.findChild(QAction, "aboutAction").trigger()
        qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), AboutDialog), timeout=5000)
        dialog = QApplication.activeModalWidget()
        text = dialog.label.text()
        for label, value in (
            ("attnlab", attnlab.__version__),
            ("PyTorch", torch.__version__),
            ("Qt", qVersion()),
            ("PySide6", PySide6.__version__),
            ("pyqtgraph", pyqtgraph.__version__),
            ("Compute device", device_description(model.device)),
        ):
            assert f"<b>{label}</b>&nbsp;&nbsp;</td><td>{value}</td>" in text, label
        dialog.reject()
        qtbot.waitUntil(lambda: QApplication.activeModalWidget() is None, timeout=5000)
    finally:
        window.errors.uninstall()
        window.session.shutdown()
